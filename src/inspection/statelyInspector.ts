/**
 * The Stately inspector (`@statelyai/inspect`) for a running taskvisor:
 * `taskvisor serve --inspect`.
 *
 * Every task actor's inspection events go through the official
 * `createWebSocketInspector` to a WebSocket relay on 127.0.0.1. The relay
 * speaks the protocol of `createInspectorServer` from
 * `@statelyai/inspect/server` (each message a client sends goes to every other
 * client; the last 200 are replayed to a newcomer) and serves the same
 * bridge page, which embeds the Stately inspector UI. It is our own because
 * `createInspectorServer` (0.7.2) listens on every interface, cannot report
 * the port it got for port 0, and its `stop()` leaves connections open (ws 8),
 * so a process using it never exits.
 *
 * Works with no internet: the relay is local, and nothing opens a browser.
 * The UI page itself is served from stately.ai; offline, use `--trace FILE`.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { StatelyInspectionEvent } from '@statelyai/inspect';
import { WebSocket, WebSocketServer } from 'ws';
import type { InspectionEvent } from 'xstate';
import { sanitize } from './redact.js';

export interface StatelyInspectorOptions {
  /** Port of the relay on 127.0.0.1. Default 0 (any free port). */
  port?: number;
  /** Replace task arguments, results, answers, input request params and error data by `"[redacted]"`. Default true. */
  redact?: boolean;
  /** The inspector UI the bridge page embeds. Default `https://stately.ai/inspect`. */
  uiUrl?: string;
  /** How long to wait for the inspector to connect to the relay. Default 5 s. */
  connectTimeoutMs?: number;
}

export interface StatelyInspector {
  /** The inspection function for `createRuntime({ inspect })`. */
  readonly inspect: (event: InspectionEvent) => void;
  /** The relay: `ws://127.0.0.1:<port>` (what `createWebSocketReceiver({ server })` connects to). */
  url: string;
  /** The bridge page to open in a browser: `http://127.0.0.1:<port>/`. */
  pageUrl: string;
  /** How to open it, for a person (printed by `serve --inspect`). */
  instructions: string;
  /** Stops the inspector, then the relay (its connections too). */
  close(): Promise<void>;
}

/** Messages the relay keeps for a client that connects later (as `createInspectorServer` does). */
const REPLAY = 200;

/** Starts the relay on 127.0.0.1 and connects a `createWebSocketInspector` to it. */
export async function attachStatelyInspector(options: StatelyInspectorOptions = {}): Promise<StatelyInspector> {
  const redact = options.redact ?? true;
  const uiUrl = options.uiUrl ?? 'https://stately.ai/inspect';
  // Loaded on demand (~150 ms): importing taskvisor costs nothing when the inspector is not used.
  const { createWebSocketInspector } = await import('@statelyai/inspect');
  const relay = await startRelay(options.port ?? 0, uiUrl);
  const connected = relay.nextConnection(options.connectTimeoutMs ?? 5_000);
  const inspector = createWebSocketInspector({
    url: relay.url,
    ...(redact ? { serialize: redactStatelyEvent } : {}),
  });
  // The adapter (0.7.2) reconnects 5 s after any socket error, also after stop(): a socket that errs while
  // closing would keep the process alive, retrying a relay that is gone. Its handlers are defused first.
  const stopInspector = () => {
    // Cast: @statelyai/inspect exposes no way to close its relay socket quietly; its adapter's private `ws` is defused.
    const socket = (inspector.adapter as unknown as { ws?: { onerror: unknown; onclose: unknown } }).ws;
    if (socket) socket.onerror = () => {};
    inspector.stop();
  };
  try {
    await connected;
  } catch (error) {
    stopInspector();
    await relay.close();
    throw error;
  }
  const observer = inspector.inspect;
  let closing: Promise<void> | undefined;
  return {
    inspect: (event) => {
      if (!closing) observer.next?.(event);
    },
    url: relay.url,
    pageUrl: relay.pageUrl,
    instructions: [
      `Stately inspector: task actors are relayed on ${relay.url} (127.0.0.1 only${redact ? ', task data redacted' : ''}).`,
      `  Open ${relay.pageUrl} in a browser on this machine to watch them live. That page embeds the Stately`,
      `  inspector UI, which is served from ${new URL(uiUrl).origin} and needs internet access; the events reach it in`,
      `  your browser. Any WebSocket client can read the relay too (createWebSocketReceiver({ server: '${relay.url}' })).`,
      `  Offline, use --trace FILE (a JSONL trace) and \`taskvisor machines export\` for the diagrams.`,
    ].join('\n'),
    close() {
      closing ??= (async () => {
        // Defer to after the inspector's own queued sends (it sends from a setTimeout(0)).
        await new Promise((resolve) => setTimeout(resolve, 0));
        stopInspector();
        await relay.close();
      })();
      return closing;
    },
  };
}

/** What the relay sends: the same event with task data replaced (the definition is the machine's, no task data). */
function redactStatelyEvent(event: StatelyInspectionEvent): StatelyInspectionEvent {
  const copy: Record<string, unknown> = { ...event };
  if ('event' in copy) copy.event = sanitize(copy.event, true);
  if ('snapshot' in copy) copy.snapshot = sanitize(copy.snapshot, true);
  // Cast: the sanitized copy keeps every member of the event it was copied from, with JSON-safe values.
  return copy as unknown as StatelyInspectionEvent;
}

interface Relay {
  url: string;
  pageUrl: string;
  nextConnection(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

async function startRelay(port: number, uiUrl: string): Promise<Relay> {
  let actualPort = port;
  const localHosts = () => new Set([`127.0.0.1:${actualPort}`, `localhost:${actualPort}`]);
  const server = createServer((request, response) => {
    // A page of another site must not reach this through DNS rebinding.
    if (!localHosts().has(request.headers.host ?? '')) {
      response.writeHead(421, { 'content-type': 'text/plain' }).end('Misdirected request\n');
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(bridgePage(uiUrl));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  actualPort = (server.address() as AddressInfo).port;
  // Attached once listening: a failed listen (EADDRINUSE) is reported above, not re-emitted by the relay.
  const wss = new WebSocketServer({
    server,
    // Node clients send no Origin; a browser may only connect from the bridge page itself.
    verifyClient: ({ req }: { req: IncomingMessage }) => {
      const origin = req.headers.origin;
      return origin === undefined || [...localHosts()].some((host) => origin === `http://${host}`);
    },
  });
  wss.on('error', () => {});
  const buffer: string[] = [];
  const waiting = new Set<() => void>();
  wss.on('connection', (socket) => {
    for (const resolve of [...waiting]) resolve();
    for (const message of buffer) socket.send(message);
    socket.on('error', () => {});
    socket.on('message', (data) => {
      const message = data.toString();
      buffer.push(message);
      if (buffer.length > REPLAY) buffer.shift();
      for (const client of wss.clients) if (client !== socket && client.readyState === WebSocket.OPEN) client.send(message);
    });
  });
  return {
    url: `ws://127.0.0.1:${actualPort}`,
    pageUrl: `http://127.0.0.1:${actualPort}/`,
    nextConnection: (timeoutMs) =>
      new Promise<void>((resolve, reject) => {
        const done = () => {
          clearTimeout(timer);
          waiting.delete(done);
          resolve();
        };
        const timer = setTimeout(() => {
          waiting.delete(done);
          reject(new Error(`the inspector did not connect to its relay on 127.0.0.1:${actualPort} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiting.add(done);
      }),
    close: async () => {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The bridge page: the inspector UI in an iframe, fed from the relay (the page `createInspectorServer` serves). */
function bridgePage(uiUrl: string): string {
  const src = JSON.stringify(uiUrl).replace(/</g, '\\u003c');
  return `<!DOCTYPE html>
<html>
<head>
  <meta charset="utf-8">
  <title>taskvisor · Stately inspector</title>
  <style>* { margin: 0; padding: 0; } html, body { height: 100%; } iframe { width: 100%; height: 100%; border: none; }</style>
</head>
<body>
  <iframe id="inspector"></iframe>
  <script>
    const iframe = document.getElementById('inspector');
    iframe.src = ${src};
    const buffer = [];
    let connected = false;
    window.addEventListener('message', (e) => {
      if (e.data && e.data.type === '@statelyai.connected') {
        connected = true;
        for (const event of buffer.splice(0)) iframe.contentWindow.postMessage(event, '*');
      }
    });
    const ws = new WebSocket('ws://' + location.host);
    ws.onmessage = (event) => {
      const data = JSON.parse(event.data);
      if (connected) iframe.contentWindow.postMessage(data, '*');
      else buffer.push(data);
    };
  </script>
</body>
</html>`;
}
