/**
 * stdio: the SDK's `serveStdio` (era chosen by the opening message; one
 * pinned instance per connection). A stdio connection is one local
 * principal (I-7). Nothing but protocol goes to stdout.
 */
import type { Readable, Writable } from 'node:stream';
import { serveStdio as sdkServeStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { LOCAL_PRINCIPAL, type Principal } from '../core/principal.js';
import type { TaskvisorRuntime } from '../runtime/TaskvisorRuntime.js';

export interface StdioOptions {
  stdin?: Readable;
  stdout?: Writable;
  principal?: Principal;
}

/** Serves a started runtime over stdio until stdin ends; resolves the handle. */
export function serveStdio(runtime: TaskvisorRuntime, options: StdioOptions = {}): { close(): Promise<void>; closed: Promise<void> } {
  const transport = new StdioServerTransport(options.stdin, options.stdout);
  let onClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => (onClosed = resolve));
  const principal = options.principal ?? LOCAL_PRINCIPAL;
  const handle = sdkServeStdio(
    runtime.serverFactory(() => principal),
    { transport, onerror: (error) => runtime.logger.error('stdio', error) },
  );
  // The SDK owns transport.onclose; watch the stream itself for the end of the connection.
  const stdin = options.stdin ?? process.stdin;
  stdin.once('end', () => onClosed());
  stdin.once('close', () => onClosed());
  runtime.onClose(() => handle.close());
  return { close: () => handle.close(), closed };
}
