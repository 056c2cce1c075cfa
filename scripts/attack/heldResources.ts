/**
 * Attacks on what a client can hold open rather than send: live tasks,
 * listen streams it never reads, 2025-11-25 sessions, idle and half-sent
 * connections, WebSocket replies it never reads. Each one goes as far as the
 * limits let one principal go (and a little past, to see the refusal).
 */
import { connect, type Socket } from 'node:net';
import { TOKENS, call, delay, envelope, metric, rawRequest, within, type AttackScenario, type AttackTarget } from './harness.js';

/** Opens a raw TCP socket to the target and resolves once it is connected. */
function openSocket(target: AttackTarget): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: target.port });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Resolves when `socket` is closed by the other side, or after `ms` with false. */
function closedWithin(socket: Socket, ms: number): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

export const liveTasks: AttackScenario = {
  name: 'live-tasks',
  resource: 'live tasks per principal',
  limit: 'limits.maxLiveTasksPerPrincipal (1000)',
  quick: true,
  limits: (scale) => (scale < 1 ? { maxLiveTasksPerPrincipal: 100 } : {}),
  async run(target, scale) {
    const wanted = (scale < 1 ? 100 : 1_000) + 20;
    let created = 0;
    let refused = 0;
    // 16 at a time: creates are write-ahead (I-1), so this is also a store write burst.
    for (let next = 0; next < wanted; next += 16) {
      const batch = Array.from({ length: Math.min(16, wanted - next) }, () =>
        call(target, 'tools/call', { name: 'sleep', arguments: { ms: 600_000 } }, TOKENS.attacker),
      );
      for (const { message } of await Promise.all(batch)) {
        if (message?.result?.resultType === 'task') created += 1;
        else if (message?.error) refused += 1;
      }
    }
    return `${created} tasks live, ${refused} refused past the limit`;
  },
};

export const unreadListenStreams: AttackScenario = {
  name: 'listen-streams',
  resource: 'listen streams per principal (never read)',
  limit: 'limits.maxListenStreamsPerPrincipal (32), maxOutboundBufferBytes (8 MiB)',
  quick: true,
  async run(target, scale) {
    const streams = Math.round(64 * scale) + 8;
    const sockets: Socket[] = [];
    try {
      for (let index = 0; index < streams; index += 1) {
        const socket = await openSocket(target);
        socket.on('error', () => {});
        // Never read: pause so the kernel buffers fill and the server's writes queue.
        socket.pause();
        socket.write(rawRequest(target.port, 'subscriptions/listen', { notifications: { toolsListChanged: true } }, TOKENS.attacker));
        sockets.push(socket);
      }
      await delay(1_000);
      // A principal's cap answers 429 on the socket: read what each one got first.
      let refused = 0;
      for (const socket of sockets) {
        const chunk = socket.read(64) as Buffer | null;
        if (chunk?.toString('latin1').startsWith('HTTP/1.1 429')) refused += 1;
      }
      return `${streams} listens opened, ${refused} refused (429)`;
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  },
};

export const legacySessions: AttackScenario = {
  name: 'sessions',
  resource: '2025-11-25 HTTP sessions per principal',
  limit: 'limits.maxHttpSessionsPerPrincipal (32), maxHttpSessions (1000), httpSessionIdleMs (10 min)',
  quick: true,
  async run(target, scale) {
    const wanted = Math.round(200 * scale) + 8;
    let opened = 0;
    let refused = 0;
    for (let index = 0; index < wanted; index += 1) {
      const response = await fetch(target.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${TOKENS.attacker}`,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: index,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'attack', version: '1' } },
        }),
      });
      await response.arrayBuffer();
      if (response.headers.get('mcp-session-id')) opened += 1;
      else if (response.status === 429 || response.status === 503) refused += 1;
    }
    return `${opened} sessions opened, ${refused} refused`;
  },
};

export const idleConnections: AttackScenario = {
  name: 'idle-connections',
  resource: 'idle and half-sent connections',
  limit: "Node's headersTimeout (60 s) and keepAliveTimeout (5 s)",
  async run(target, scale) {
    const count = Math.round(2_000 * scale) + 20;
    const sockets: Socket[] = [];
    try {
      for (let index = 0; index < count; index += 1) {
        const socket = await openSocket(target);
        socket.on('error', () => {});
        // Half the connections send half a request head and stop (slowloris); the rest send nothing.
        if (index % 2 === 0) socket.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${target.port}\r\nx-slow: `);
        sockets.push(socket);
      }
      await delay(2_000);
      return `${sockets.filter((socket) => !socket.destroyed).length} of ${count} connections held open`;
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  },
};

/**
 * Opens a WebSocket to the target over a raw TCP socket (the handshake written
 * by hand), so the attack can write frames it built once: a `ws` client
 * serialises and masks every send in this process, and 400 MiB of that stalls
 * the bystander calling from this same process for seconds — which would be
 * measured as the server's latency.
 */
function openRawWebSocket(target: AttackTarget, token: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: target.wsPort });
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      if (head.startsWith('HTTP/1.1 101')) resolve(socket);
      else reject(new Error(`upgrade refused: ${head.slice(0, 120)}`));
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('connect', () =>
      socket.write(
        `GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${target.wsPort}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
          `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: mcp\r\n` +
          `Authorization: Bearer ${token}\r\n\r\n`,
      ),
    );
  });
}

/** One client text frame carrying `payload`, masked with the all-zero key (RFC 6455 §5.3 lets a client pick any key) so it is built without a pass over the bytes. */
function textFrame(payload: Buffer): Buffer {
  const head = Buffer.alloc(14);
  head[0] = 0x81;
  head[1] = 0x80 | 127;
  head.writeBigUInt64BE(BigInt(payload.length), 2);
  // Bytes 10..13: the masking key, zero.
  return Buffer.concat([head, payload]);
}

export const unreadWebSocketReplies: AttackScenario = {
  name: 'websocket-unread',
  resource: 'outbound bytes per WebSocket (never read)',
  limit: 'limits.maxOutboundBufferBytes (8 MiB), outboundGraceMs (10 s), maxInflightRequestsPerConnection (16)',
  quick: true,
  limits: () => ({ outboundGraceMs: 2_000 }),
  async run(target, scale) {
    const sockets = Math.max(2, Math.round(10 * scale));
    const text = Buffer.alloc(1024 * 1024, 'x');
    const meta = JSON.stringify(envelope());
    // 40 `tools/call echo` of 1 MiB each, built once and written to every socket.
    const frames = Array.from({ length: 40 }, (_, index) =>
      textFrame(
        Buffer.concat([
          Buffer.from(`{"jsonrpc":"2.0","id":${index},"method":"tools/call","params":{"name":"echo","arguments":{"text":"`),
          text,
          Buffer.from(`"},"_meta":${meta}}}`),
        ]),
      ),
    );
    const clients: Socket[] = [];
    try {
      const before = await metric(target, 'taskvisor_backpressure_closes_total');
      await Promise.all(
        Array.from({ length: sockets }, async () => {
          const socket = await openRawWebSocket(target, TOKENS.attacker);
          socket.on('error', () => {});
          clients.push(socket);
          // Never read: replies pile up on the server's side.
          socket.pause();
          for (const frame of frames) socket.write(frame);
        }),
      );
      // A client that does not read cannot see the close frame: the server's own count says whether it closed them.
      let closed = 0;
      await within(30_000, async () => (closed = (await metric(target, 'taskvisor_backpressure_closes_total')) - before) >= sockets);
      return `${closed} of ${sockets} unread sockets closed by the server`;
    } finally {
      for (const socket of clients) socket.destroy();
    }
  },
};

export const halfSentBodies: AttackScenario = {
  name: 'half-sent-bodies',
  resource: 'request bodies in flight (announced, never finished)',
  limit: 'limits.maxInboundBodyBytesPerPrincipal (16 MiB), maxInboundBodyBytes (128 MiB), requestBodyTimeoutMs (30 s)',
  quick: true,
  // The quick run: a smaller budget and a deadline short enough for every held body to be dropped within the run.
  limits: (scale) => (scale < 1 ? { maxInboundBodyBytesPerPrincipal: 8 * 1024 * 1024, requestBodyTimeoutMs: 500 } : {}),
  async run(target, scale) {
    const count = Math.round(200 * scale) + 4;
    const sockets: Socket[] = [];
    const answers = new Map<Socket, string>();
    try {
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      for (let index = 0; index < count; index += 1) {
        const socket = await openSocket(target);
        socket.on('error', () => {});
        // Read what comes back (a refusal's status line): a socket nobody reads never sees the server close it.
        socket.on('data', (data: Buffer) => {
          if (!answers.has(socket)) answers.set(socket, data.toString('latin1', 0, 12));
        });
        socket.write(
          `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${target.port}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n` +
            `authorization: Bearer ${TOKENS.attacker}\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\ncontent-length: ${4 * 1024 * 1024 - 1}\r\n\r\n{"x":"`,
        );
        // Three of the four announced MiB, then silence.
        for (let part = 0; part < 3; part += 1) socket.write(chunk);
        sockets.push(socket);
      }
      await delay(1_000);
      let closed = 0;
      for (const socket of sockets) if (await closedWithin(socket, 0)) closed += 1;
      const refused = (status: string) => [...answers.values()].filter((line) => line === `HTTP/1.1 ${status}`).length;
      return `${count} bodies of 3 MiB announced as 4: ${refused('429')} refused 429, ${refused('503')} 503, ${closed} closed by the server`;
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  },
};
