/**
 * stdio: the SDK's `serveStdio` (era chosen by the opening message; one
 * pinned instance per connection). A stdio connection is one local
 * principal (I-7). Nothing but protocol goes to stdout.
 */
import type { Readable, Writable } from 'node:stream';
import { serveStdio as sdkServeStdio } from '@modelcontextprotocol/server/stdio';
import { LOCAL_PRINCIPAL, type Principal } from '../core/principal.js';
import type { ServingRuntime } from './ServingRuntime.js';
import { ListenInterceptingTransport } from './ListenInterceptingTransport.js';
import { logTransportError } from './transportErrors.js';
import { StdioLineTransport } from './StdioLineTransport.js';
import { publish } from '../core/diagnostics.js';
import { principalOutboundOf } from './PrincipalOutbound.js';

export interface StdioOptions {
  stdin?: Readable;
  stdout?: Writable;
  principal?: Principal;
}

/**
 * Serves the runtime over stdio until stdin ends; resolves the handle. The
 * runtime may still be starting: until it serves, messages wait (and
 * `tasks/*` are answered while it recovers: RecoveryGate).
 */
export function serveStdio(runtime: ServingRuntime, options: StdioOptions = {}): { close(): Promise<void>; closed: Promise<void> } {
  const principal = options.principal ?? runtime.localPrincipal ?? LOCAL_PRINCIPAL;
  // Listens are served by taskvisor's hub: the SDK's stdio listen router strips taskIds (P8).
  const transport = new ListenInterceptingTransport(
    // Our line transport: every bad line gets its JSON-RPC error, limits apply (runtime.limits).
    new StdioLineTransport({
      ...(options.stdin ? { stdin: options.stdin } : {}),
      ...(options.stdout ? { stdout: options.stdout } : {}),
      maxLineBytes: runtime.limits.maxRequestBodyBytes,
      maxJsonDepth: runtime.limits.maxJsonDepth,
      maxOutboundBufferBytes: runtime.limits.maxOutboundBufferBytes,
      outboundGraceMs: runtime.limits.outboundGraceMs,
      principalOutbound: { ledger: principalOutboundOf(runtime), principal: principal.id },
      onOverBudget: (reason) => {
        runtime.logger.info(`stdio: closing the connection of ${principal.id}: ${reason}`);
        publish('taskvisor:backpressure.close', () => ({ stream: 'stdio' }));
      },
      maxJsonKeys: runtime.limits.maxJsonKeys,
      maxJsonNodes: runtime.limits.maxJsonNodes,
      maxMetaNodes: runtime.limits.maxMetaNodes,
    }),
    runtime.subscriptions,
    principal.id,
    runtime.logger,
    // Served from before recovery: tasks/* answered while it runs, the rest held until serving.
    runtime,
  );
  let onClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => (onClosed = resolve));
  const handle = sdkServeStdio(
    runtime.serverFactory(() => principal),
    { transport, onerror: (error) => logTransportError(runtime.logger, 'stdio', error) },
  );
  // The SDK owns transport.onclose; watch the stream itself for the end of the connection.
  const stdin = options.stdin ?? process.stdin;
  stdin.once('end', () => onClosed());
  stdin.once('close', () => onClosed());
  runtime.onClose(() => handle.close());
  return { close: () => handle.close(), closed };
}
