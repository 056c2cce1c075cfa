/**
 * `serve --inspect [--inspect-port N]` and `serve --trace FILE [--trace-raw]`:
 * opens what was asked for before the runtime is built, so the runtime gets
 * one `inspect` function (both compose), or none at all when neither flag is
 * given (inspection costs nothing then).
 */
import { ConfigError } from '../config/loadConfig.js';
import { composeInspectors, type InspectFn } from '../inspection/redact.js';
import type { StatelyInspector } from '../inspection/statelyInspector.js';
import { createTraceInspector, TraceFileRefusedError, type TraceInspector } from '../inspection/trace.js';
import type { Logger } from '../runtime/Logger.js';

export interface InspectionArgs {
  inspect?: boolean;
  /** Port of the inspector relay on 127.0.0.1 (implies `inspect`). Default: any free port. */
  inspectPort?: string | number;
  /** JSONL trace file. */
  trace?: string;
  /** Do not redact task data in the trace. */
  traceRaw?: boolean;
}

export interface OpenedInspection {
  inspect: InspectFn | undefined;
  stately: StatelyInspector | undefined;
  trace: TraceInspector | undefined;
  close(): Promise<void>;
}

/** Checks the flags; throws a `ConfigError` for a bad one before anything is opened. */
export function checkInspectionArgs(args: InspectionArgs): { port: number | undefined } {
  if (args.traceRaw && args.trace === undefined) throw new ConfigError('--trace-raw needs --trace FILE');
  if (args.trace !== undefined && args.trace === '') throw new ConfigError('--trace: expected a file name');
  if (args.inspectPort === undefined) return { port: undefined };
  const text = String(args.inspectPort);
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) throw new ConfigError(`--inspect-port ${text}: expected a port number (0-65535)`);
  return { port };
}

/** Opens the trace and/or the Stately inspector relay. */
export async function openInspection(args: InspectionArgs, logger: Logger): Promise<OpenedInspection> {
  const { port } = checkInspectionArgs(args);
  let trace: TraceInspector | undefined;
  let stately: StatelyInspector | undefined;
  if (args.trace !== undefined) {
    try {
      trace = createTraceInspector({
        file: args.trace,
        redact: !args.traceRaw,
        onError: (error) => logger.error(`the trace ${args.trace} stopped`, error),
      });
    } catch (error) {
      throw new ConfigError(
        error instanceof TraceFileRefusedError
          ? `--trace ${args.trace}: refused: ${error.message}`
          : `--trace ${args.trace}: cannot open the file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
  }
  if (args.inspect || port !== undefined) {
    try {
      stately = await (await import('../inspection/statelyInspector.js')).attachStatelyInspector(port !== undefined ? { port } : {});
    } catch (error) {
      await trace?.close();
      throw new ConfigError(
        `--inspect: cannot start the inspector relay on 127.0.0.1:${port ?? 0}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
    }
  }
  return {
    inspect: composeInspectors(stately?.inspect, trace?.inspect),
    stately,
    trace,
    close: async () => {
      await Promise.all([stately?.close(), trace?.close()]);
    },
  };
}
