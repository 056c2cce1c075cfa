/**
 * The operations routes on a port of their own (`--operations HOST:PORT`,
 * config `operations.listen`): for a service that serves MCP only over
 * stdio or WebSocket, or that keeps health and metrics off the MCP port.
 * Bound before `runtime.start()`, so a balancer sees `recovering` while
 * unfinished tasks are resumed.
 */
import { createServer, type Server as NodeHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ListenerGuard } from '../transports/listenerGuard.js';
import { nodeRequestHandler } from '../transports/nodeAdapter.js';
import type { Operations } from './Operations.js';
import type { OperationsRuntime } from './OperationsRuntime.js';
import { notFound } from './httpResponses.js';

export interface OperationsListenOptions {
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 9464 (the Prometheus exporter port convention); 0 picks a free port. */
  port?: number;
}

export interface OperationsListener {
  server: NodeHttpServer;
  /** e.g. `http://127.0.0.1:9464`. */
  url: string;
  close(): Promise<void>;
}

/** Serves `operations.routes` on `host:port`; other paths get 404. Closed with the runtime. */
export async function listenOperations(
  runtime: OperationsRuntime,
  operations: Operations,
  options: OperationsListenOptions = {},
): Promise<OperationsListener> {
  const host = options.host ?? '127.0.0.1';
  // The same containment as the MCP listener: no request head can end the process.
  const guard = new ListenerGuard('operations', runtime.logger);
  const server = createServer(
    guard.request((req, res) => {
      const client = { remoteAddress: req.socket.remoteAddress };
      return nodeRequestHandler({
        fetch: (request: Request) =>
          operations.routes.owns(new URL(request.url).pathname) ? operations.routes.fetch(request, client) : Promise.resolve(notFound()),
      })(req, res);
    }),
  );
  guard.attach(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 9464, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const untrack = operations.health.trackListener('operations', () => server.listening);
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      untrack();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    })());
  runtime.onClose(close);
  return { server, url: `http://${shownHost}:${address.port}`, close };
}
