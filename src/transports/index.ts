/**
 * `taskvisor/transports`: serving a runtime over Streamable HTTP, stdio and
 * WebSocket (docs/api.md).
 */
export { createHttpEntry, type HttpEntry, type HttpEntryOptions } from './http.js';
export { listenHttp, type HttpListener, type ListenOptions } from './listenHttp.js';
export { serveStdio, type StdioOptions } from './stdio.js';
export { listenWebSocket, type WebSocketListenOptions, type WebSocketListener } from './websocket.js';
export { WebSocketServerTransport, type WebSocketServerTransportOptions } from './WebSocketServerTransport.js';
export { StdioLineTransport, type StdioLineTransportOptions } from './StdioLineTransport.js';
export type { HttpRoutes, HttpClientInfo } from './HttpRoutes.js';
export type { HostRequest } from './hostRequest.js';
export {
  taskvisorExpress,
  taskvisorFastify,
  taskvisorKoa,
  type ExpressLikeRequest,
  type FastifyLikeInstance,
  type FastifyLikeReply,
  type FastifyLikeRequest,
  type HostPrincipalOptions,
  type KoaLikeContext,
} from './frameworkAdapters.js';
