/**
 * MCP over WebSocket (not a spec transport; the v2 SDK has none): each
 * socket is wrapped as an SDK `Transport` and served by the SDK's
 * `serveStdio(factory, { transport })`, so a connection behaves like a stdio
 * connection — era chosen by the opening message, one pinned instance, both
 * 2026-07-28 and 2025-11-25 clients, server→client requests on legacy
 * connections, `subscriptions/listen` (with `taskIds`) served by taskvisor's
 * hub (sdk-v2-notes §5, P8).
 *
 * The front door is the HTTP upgrade: path (404), Host check (403, DNS
 * rebinding), Origin check (403, cross-site WebSocket hijacking: browsers let
 * any page open a socket to localhost), then `authenticate` (401). The
 * principal it resolves holds for the connection's lifetime (I-7).
 */
import { publish } from '../core/diagnostics.js';
import { createServer, type IncomingMessage, type Server as NodeHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { serveStdio as sdkServeStdio } from '@modelcontextprotocol/server/stdio';
import { WebSocketServer, type WebSocket } from 'ws';
import { ANONYMOUS_PRINCIPAL, type Authenticate, type Principal } from '../core/principal.js';
import type { ServingRuntime } from './ServingRuntime.js';
import { ListenInterceptingTransport } from './ListenInterceptingTransport.js';
import { admit, defaultAllowedOrigins, isLoopbackHost, jsonError, LOOPBACK_HOSTS, untilServing } from './admission.js';
import { bearerGate, type BearerAuthOptions } from '../auth/bearer.js';
import {
  FRAME_BYTES_PER_TURN,
  WS_CLOSE_GOING_AWAY,
  WS_CLOSE_POLICY_VIOLATION,
  WebSocketServerTransport,
} from './WebSocketServerTransport.js';
import { InboundTurns } from './InboundTurns.js';
import { inboundBudgetOf } from './InboundBudget.js';
import { guardWebSocketInbound } from './wsInboundGuard.js';
import { logTransportError } from './transportErrors.js';
import { ListenerGuard, writeRaw } from './listenerGuard.js';
import { principalOutboundOf } from './PrincipalOutbound.js';

export interface WebSocketListenOptions {
  /** Interface to bind. Default `127.0.0.1`. */
  host?: string;
  /** Port; 0 picks a free one. Default 3001. */
  port?: number;
  /** Path served; upgrades elsewhere get 404. Default `/mcp`. */
  path?: string;
  /**
   * Resolves the principal of a connection from its upgrade request (URL and
   * headers; no body); `null` refuses it with 401. Default: one anonymous
   * principal. The same hook type as HTTP's. Not with `auth`.
   */
  authenticate?: Authenticate;
  /**
   * Bearer-token authentication of the upgrade request (`Authorization:
   * Bearer <token>`; 401 with `WWW-Authenticate` otherwise), as on HTTP. The
   * principal holds for the connection's lifetime. The protected-resource
   * metadata document is served over plain HTTP on this port. Not with `authenticate`.
   */
  auth?: BearerAuthOptions;
  /** Host header names accepted. Default: the loopback names on loopback binds, else no check. `false` turns it off. */
  allowedHosts?: string[] | false;
  /**
   * Origin host names accepted from browsers (an upgrade without `Origin`,
   * i.e. a non-browser client, always passes). Default: the loopback names
   * on loopback binds; elsewhere the `allowedHosts` names, or none (every
   * browser Origin refused: cross-site WebSocket hijacking).
   * `false` turns it off.
   */
  allowedOrigins?: string[] | false;
  /** Largest inbound frame in bytes; a bigger one closes the socket with 1009. Default `runtime.limits.maxRequestBodyBytes`. */
  maxPayloadBytes?: number;
  /** Ping interval; a socket that has not answered the previous ping is terminated. 0 disables. Default 30 s. */
  keepAliveMs?: number;
}

export interface WebSocketListener {
  server: NodeHttpServer;
  /** The MCP endpoint URL, e.g. `ws://127.0.0.1:3001/mcp`. */
  url: string;
  /** Open connections. */
  readonly connections: number;
  /** Ends every listen stream gracefully, closes every socket with 1001, stops listening. */
  close(): Promise<void>;
}

interface Connection {
  socket: WebSocket;
  transport: WebSocketServerTransport;
  close(): Promise<void>;
  alive: boolean;
}

/** Listens on `host:port` and serves the runtime over WebSocket at `path`. */
export async function listenWebSocket(runtime: ServingRuntime, options: WebSocketListenOptions = {}): Promise<WebSocketListener> {
  const host = options.host ?? '127.0.0.1';
  const path = options.path ?? '/mcp';
  const isLoopback = isLoopbackHost(host);
  const allowedHosts = options.allowedHosts ?? (isLoopback ? LOOPBACK_HOSTS : false);
  // Checked on every bind: see defaultAllowedOrigins.
  const allowedOrigins = options.allowedOrigins ?? defaultAllowedOrigins(isLoopback, allowedHosts);
  if (options.auth && options.authenticate)
    throw new TypeError('listenWebSocket: give either auth (bearer tokens) or authenticate (a custom hook), not both');
  const authenticate: Authenticate = options.authenticate ?? (() => ANONYMOUS_PRINCIPAL);
  const bearer = options.auth ? bearerGate(options.auth, runtime.logger, runtime.serverInfo?.name, runtime.callerCredentials) : undefined;
  const connections = new Set<Connection>();
  // One turn budget for every connection: a few clients' large frames cannot hold the loop (InboundTurns.ts).
  const inboundTurns = new InboundTurns(FRAME_BYTES_PER_TURN);
  let closing = false;

  // Offered subprotocols: ws picks the first by default; the v1 SDK client offers `mcp` and fails without it.
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayloadBytes ?? runtime.limits.maxRequestBodyBytes });

  // Head check and failure containment per request and per upgrade.
  const guard = new ListenerGuard('websocket', runtime.logger);
  const server = createServer(
    guard.request((req, res) => {
      if (bearer && new URL(req.url ?? '/', 'http://x').pathname === bearer.metadataPath(path)) {
        void serveMetadata(req, res);
        return;
      }
      // Plain HTTP: the endpoint only speaks WebSocket.
      const onPath = new URL(req.url ?? '/', 'http://x').pathname === path;
      const status = onPath ? 426 : 404;
      const message = onPath ? 'Upgrade Required: MCP is served over WebSocket here' : `Not found: MCP is served at ${path}`;
      res.writeHead(status, { 'content-type': 'application/json', ...(onPath ? { upgrade: 'websocket', connection: 'Upgrade' } : {}) });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: onPath ? -32600 : -32601, message } }));
    }),
  );
  guard.attach(server);

  // The target and Host were judged and normalised by the guard; a throw or rejection here answers 500 (ref id).
  server.on(
    'upgrade',
    guard.upgrade(async (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const outcome = await admitUpgrade(req);
      if (outcome instanceof Response) return refuse(socket, outcome);
      // Bound before recovery: the upgrade waits for the runtime to serve — except while it
      // recovers: then the connection opens, and its messages pass the RecoveryGate like HTTP requests.
      if (runtime.recovering?.() !== true) {
        const notServing = await untilServing(runtime);
        if (notServing) return refuse(socket, notServing);
      }
      if (closing || socket.destroyed) return void socket.destroy();
      wss.handleUpgrade(req, socket, head, (ws) => {
        // limits: maxInboundBodyBytes(PerPrincipal), requestBodyTimeoutMs — partial frames are paid for (wsInboundGuard.ts).
        guardWebSocketInbound(socket, ws, outcome.id, {
          budget: inboundBudgetOf(runtime, runtime.limits),
          limits: runtime.limits,
          logger: runtime.logger,
        });
        accept(ws, outcome);
      });
    }),
  );

  /** The principal of an upgrade request, or the HTTP response refusing it. */
  const admitUpgrade = (req: IncomingMessage): Promise<Principal | Response> =>
    admit(upgradeRequest(req), { path, authenticate, bearer, allowedHosts, allowedOrigins, logger: runtime.logger });

  /** The protected-resource metadata document, behind the same Host/Origin checks as the upgrade. */
  const serveMetadata = async (req: IncomingMessage, res: import('node:http').ServerResponse): Promise<void> => {
    const outcome = await admitUpgrade(req);
    const response = outcome instanceof Response ? outcome : jsonError(500, -32603, 'unexpected');
    const body = Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(body);
  };

  const accept = (socket: WebSocket, principal: Principal): void => {
    const transport = new WebSocketServerTransport(socket, {
      maxJsonDepth: runtime.limits.maxJsonDepth,
      maxJsonKeys: runtime.limits.maxJsonKeys,
      maxJsonNodes: runtime.limits.maxJsonNodes,
      maxMetaNodes: runtime.limits.maxMetaNodes,
      maxOutboundBufferBytes: runtime.limits.maxOutboundBufferBytes,
      outboundGraceMs: runtime.limits.outboundGraceMs,
      principalOutbound: { ledger: principalOutboundOf(runtime), principal: principal.id },
      maxInflightRequests: runtime.limits.maxInflightRequestsPerConnection,
      inboundTurns,
      onOverBudget: (reason) => {
        runtime.logger.info(`websocket: closing a connection of ${principal.id} (1008): ${reason}`);
        publish('taskvisor:backpressure.close', () => ({ stream: 'websocket' })); // metrics
      },
    });
    // Listens are served by taskvisor's hub: the SDK's listen router strips taskIds (P8).
    const wire = new ListenInterceptingTransport(transport, runtime.subscriptions, principal.id, runtime.logger, runtime);
    const handle = sdkServeStdio(
      runtime.serverFactory(() => principal),
      {
        transport: wire,
        onerror: (error) => logTransportError(runtime.logger, 'websocket', error),
      },
    );
    const connection: Connection = { socket, transport, close: () => handle.close(), alive: true };
    connections.add(connection);
    // The token this connection was opened with expires or is revoked → the connection ends (1008).
    const untrack = bearer?.trackSession(principal, (reason) => {
      wire.endStreams({ code: -32600, message: `Unauthorized: subscription closed: ${reason}` });
      transport.closeCode = WS_CLOSE_POLICY_VIOLATION;
      transport.closeReason = reason;
      void connection.close().catch((error: unknown) => runtime.logger.error('websocket close', error));
    });
    socket.once('close', () => untrack?.());
    socket.on('pong', () => (connection.alive = true));
    // The SDK owns transport.onclose; watch the socket itself for the end of the connection.
    socket.once('close', () => {
      connections.delete(connection);
      // A socket the client closed: let the SDK close its pinned instance too (a no-op when it already did).
      void handle.close().catch((error: unknown) => runtime.logger.error('websocket close', error));
    });
  };

  const keepAliveMs = options.keepAliveMs ?? 30_000;
  const heartbeat =
    keepAliveMs > 0
      ? setInterval(() => {
          for (const connection of connections) {
            if (!connection.alive) {
              connection.socket.terminate();
              continue;
            }
            connection.alive = false;
            try {
              connection.socket.ping();
            } catch {
              connection.socket.terminate();
            }
          }
        }, keepAliveMs)
      : undefined;
  heartbeat?.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 3001, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      closing = true;
      bearer?.close();
      if (heartbeat) clearInterval(heartbeat);
      await Promise.all(
        [...connections].map(async (connection) => {
          connection.transport.closeCode = WS_CLOSE_GOING_AWAY;
          connection.transport.closeReason = 'server shutting down';
          // Ends the connection's listen streams with their result first (ListenInterceptingTransport.close).
          await connection.close().catch((error: unknown) => runtime.logger.error('websocket close', error));
        }),
      );
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    })());
  runtime.onClose(close);
  return {
    server,
    url: `ws://${shownHost}:${address.port}${path}`,
    get connections() {
      return connections.size;
    },
    close,
  };
}

/** A web `Request` carrying the upgrade request's URL and headers (what `Authenticate` and the SDK's checks read). */
function upgradeRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  // The guard has checked the Host and reduced the target to a plain path (requestHead.ts): this cannot throw.
  return new Request(new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`), { method: req.method ?? 'GET', headers });
}

/** Answers the upgrade with `response` as a plain HTTP response and ends the socket. */
async function refuse(socket: Duplex, response: Response): Promise<void> {
  const body = await response.text();
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'content-length' && name !== 'connection') headers[name] = value;
  });
  writeRaw(socket, response.status, body, headers);
}
