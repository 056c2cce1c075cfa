/**
 * `taskvisor/client`: call tools of any MCP server speaking the Tasks
 * extension (2026-07-28) over Streamable HTTP, stdio or WebSocket, and
 * follow, answer and cancel its tasks (docs/getting-started.md).
 *
 * @packageDocumentation
 */
export {
  TasksClient,
  CLIENT_PROTOCOL_VERSION,
  type TasksEndpoint,
  type TasksClientOptions,
  type CallToolOptions,
  type InputRequest,
  type InputAnswer,
  type InputRequestContext,
  type InputRequestHandler,
  type TaskStatusUpdate,
} from './TasksClient.js';
export { WebSocketClientTransport, WebSocketUpgradeError, type WebSocketClientTransportOptions } from './WebSocketClientTransport.js';
export { TaskFailedError, TaskCancelledError, JsonRpcResponseError } from '@modelcontextprotocol/ext-tasks/client';
export type { TaskView, TaskState } from '@modelcontextprotocol/ext-tasks/client';
export type { CallToolResult } from '@modelcontextprotocol/client';
