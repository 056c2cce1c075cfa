/**
 * The WebSocket side of the inbound budget (InboundBudget.ts): the bytes of a
 * frame still arriving are held by `ws` until the frame is complete, so a
 * client announcing large frames, sending most of each and going silent would
 * make the server hold them all, one per socket. Each chunk read is charged
 * to the connection's principal (known since the upgrade) and given back once
 * a frame completes; a chunk past the principal's or the server's budget, or
 * a frame not complete within `requestBodyTimeoutMs`, drops the connection.
 */
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { Limits } from '../limits/Limits.js';
import type { Logger } from '../runtime/Logger.js';
import type { InboundBudget } from './InboundBudget.js';

export interface WebSocketInboundOptions {
  budget: InboundBudget;
  limits: Pick<Limits, 'requestBodyTimeoutMs'>;
  logger: Logger;
}

/** Charges what `raw` (the socket under `ws`) receives to `principal` until each frame completes. */
export function guardWebSocketInbound(raw: Duplex, ws: WebSocket, principal: string, options: WebSocketInboundOptions): void {
  const releases: (() => void)[] = [];
  let timer: NodeJS.Timeout | undefined;
  const drop = (reason: string) => {
    options.logger.info(`websocket: dropping a connection of ${principal}: ${reason}`);
    releaseAll();
    ws.terminate();
  };
  const releaseAll = () => {
    for (const release of releases.splice(0)) release();
    clearTimeout(timer);
    timer = undefined;
  };
  // Before ws's own listener: a chunk is charged before ws parses it (and gives it back when it completes a frame).
  raw.prependListener('data', (chunk: Buffer) => {
    const reserved = options.budget.reserve(principal, chunk.length);
    if (typeof reserved !== 'function') {
      drop(`request bytes over the ${reserved === 'principal' ? 'principal' : 'server'}'s inbound budget`);
      return;
    }
    releases.push(reserved);
    timer ??= deadline();
  });
  const deadline = (): NodeJS.Timeout => {
    const armed = setTimeout(() => {
      // Not the client's delay while the server itself does not read (a request waits, an answer is not drained).
      if (raw.isPaused()) timer = deadline();
      else drop(`a frame did not arrive within ${options.limits.requestBodyTimeoutMs} ms (requestBodyTimeoutMs)`);
    }, options.limits.requestBodyTimeoutMs);
    armed.unref();
    return armed;
  };
  // A complete frame (a message, a ping or pong) means nothing is held for a partial one.
  ws.on('message', releaseAll);
  ws.on('ping', releaseAll);
  ws.on('pong', releaseAll);
  ws.once('close', releaseAll);
}
