/**
 * What a forwarded call can tell the caller while it runs: progress for the
 * caller's own `progressToken` and log messages. The protocol layer builds
 * one per `tools/call` (src/protocol/ToolsSurface.ts); the aggregator feeds
 * it what the upstream sends (src/upstreams). No SDK types here.
 */

/** MCP log levels (RFC 5424 severities), least severe first. */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Whether `value` is an MCP log level (an upstream's `notifications/message` arrives unchecked). */
export function isLogLevel(value: unknown): value is LogLevel {
  return LOG_LEVELS.some((level) => level === value);
}

/** One progress step (`notifications/progress` without the token, which the relay owns). */
export interface ProgressUpdate {
  progress: number;
  total?: number;
  message?: string;
}

/** One log message (`notifications/message` params). */
export interface LogMessage {
  level: LogLevel;
  logger?: string;
  data: unknown;
}

export interface CallerRelay {
  /** Present only when the caller asked for progress (sent a `progressToken` with this request). */
  progress?: (update: ProgressUpdate) => void;
  log?: (message: LogMessage) => void;
}

/** Progress as a task's `statusMessage`: `3/10: message`, `3/10`, `3: message` or `3`. */
export function progressText(update: ProgressUpdate): string {
  const count = update.total !== undefined ? `${update.progress}/${update.total}` : `${update.progress}`;
  return update.message ? `${count}: ${update.message}` : count;
}
