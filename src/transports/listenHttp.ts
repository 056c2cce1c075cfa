/**
 * `listenHttp`: a standalone `node:http` server around one HTTP entry, for a
 * runtime that owns its port (`taskvisor serve`, tests, simple embeddings).
 * A host framework mounts the entry itself instead (docs/frameworks.md).
 */
import { createServer, type IncomingMessage, type Server as NodeHttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultAllowedOrigins, isLoopbackHost, LOOPBACK_HOSTS } from './admission.js';
import { createHttpEntry, type HttpEntryOptions } from './http.js';
import { ListenerGuard } from './listenerGuard.js';
import type { ServingRuntime } from './ServingRuntime.js';

export interface ListenOptions extends HttpEntryOptions {
  host?: string;
  port?: number;
}

/** A standalone HTTP server for a started runtime. */
export interface HttpListener {
  server: NodeHttpServer;
  /** The MCP endpoint URL, e.g. `http://127.0.0.1:3000/mcp`. */
  url: string;
  close(): Promise<void>;
}

/** Listens on `host:port` (default `127.0.0.1:3000`; port 0 picks a free one) and serves the runtime. */
export async function listenHttp(runtime: ServingRuntime, options: ListenOptions = {}): Promise<HttpListener> {
  const host = options.host ?? '127.0.0.1';
  const isLoopback = isLoopbackHost(host);
  const entry = createHttpEntry(runtime, {
    ...options,
    allowedHosts: options.allowedHosts ?? (isLoopback ? LOOPBACK_HOSTS : false),
    // Checked on every bind (a page in a visitor's browser reaches loopback too): see defaultAllowedOrigins.
    allowedOrigins: options.allowedOrigins ?? defaultAllowedOrigins(isLoopback, options.allowedHosts),
  });
  const guard = new ListenerGuard('http', runtime.logger);
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    if (!entry.handleNode(req, res)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: null,
          error: { code: -32601, message: `Not found: MCP is served at ${options.path ?? '/mcp'}` },
        }),
      );
    }
  };
  // The entry judges the head itself (handleNode): the listener only contains failures, so a head is judged once.
  const server = createServer((req, res) => guard.run(req, res, serve));
  guard.attach(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 3000, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const close = async () => {
    await entry.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  runtime.onClose(close);
  return { server, url: `http://${shownHost}:${address.port}${options.path ?? '/mcp'}`, close };
}
