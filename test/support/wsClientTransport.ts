/**
 * The tests' WebSocket client transport is the one the package ships
 * (`taskvisor/client`, issue 15.2): the suites over WebSocket exercise it
 * instead of a copy. The old names stay for the tests that import them.
 */
export {
  WebSocketClientTransport as WsClientTransport,
  WebSocketUpgradeError,
  type WebSocketClientTransportOptions as WsClientTransportOptions,
} from '../../src/client/WebSocketClientTransport.js';
