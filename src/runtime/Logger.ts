/**
 * Where the runtime reports what it cannot answer on the wire. Logs go to
 * stderr: on stdio, stdout belongs to the protocol.
 */
export interface Logger {
  info(message: string): void;
  error(message: string, error?: unknown): void;
}

/** Writes one line per message to stderr; `quiet` drops `info`. */
export function stderrLogger(options: { quiet?: boolean } = {}): Logger {
  return {
    info: (message) => {
      if (!options.quiet) process.stderr.write(`taskvisor: ${message}\n`);
    },
    error: (message, error) => {
      const detail = error instanceof Error ? `: ${error.message}` : error === undefined ? '' : `: ${String(error)}`;
      process.stderr.write(`taskvisor: error: ${message}${detail}\n`);
    },
  };
}

/** Drops everything (tests that assert on nothing logged use their own). */
export const silentLogger: Logger = { info: () => {}, error: () => {} };
