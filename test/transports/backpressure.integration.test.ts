/**
 * The outbound budget, through a real `taskvisor serve` process and raw sockets: a
 * WebSocket client that stops reading and asks 100 times for a task with a
 * 3 MB result, while sending unsolicited pongs. The server closes it (1008,
 * one log line), its RSS grows by no more than the outbound budget plus a
 * small constant, and another client is answered meanwhile. The same budget
 * ends an SSE listen stream whose client does not read it.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { envelope } from '../support/extTasksClient.js';
import { CLI, DEMO_TOOLS, spawnNode, tempDir, waitFor, type Child } from '../support/processes.js';
import { standardHeaders } from '../support/httpRaw.js';
import { RawWs, request } from '../support/rawWire.js';
import { openRawWebSocket, rssOf, wsFrame } from '../support/rawSocket.js';
import { connect } from 'node:net';

const STARTUP_TIMEOUT_MS = 45_000;
const BUDGET = 1024 * 1024;
const GRACE_MS = 1_000;
const RESULT_BYTES = 3 * 1024 * 1024;
const MiB = 1024 * 1024;

let dir: Awaited<ReturnType<typeof tempDir>>;
let child: Child;
let wsUrl: string;
let httpUrl: string;
let port: number;
let taskId: string;

before(async () => {
  dir = await tempDir('taskvisor-backpressure-');
  const config = join(dir.path, 'taskvisor.yaml');
  await writeFile(
    config,
    [
      'store: { kind: memory }',
      `tools: [${JSON.stringify(DEMO_TOOLS)}]`,
      'tasks: { promoteAfterMs: 0 }',
      `limits: { maxOutboundBufferBytes: ${BUDGET}, outboundGraceMs: ${GRACE_MS} }`,
      '',
    ].join('\n'),
  );
  child = spawnNode([CLI, 'serve', '--config', config, '--ws', '127.0.0.1:0', '--http', '127.0.0.1:0'], { cwd: dir.path });
  wsUrl = (await child.waitForOutput(/serving MCP over WebSocket at (\S+)\n/, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS }))[1]!;
  httpUrl = (
    await child.waitForOutput(/serving MCP over Streamable HTTP at (\S+)\n/, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS })
  )[1]!;
  port = Number(new URL(wsUrl).port);
  const setup = await RawWs.open(wsUrl);
  try {
    const created = await setup.call(request('tools/call', { name: 'sleep', arguments: { ms: 0, message: 'x'.repeat(RESULT_BYTES) } }));
    taskId = (created.result as { taskId: string }).taskId;
    await waitFor(
      async () => {
        const got = await setup.call(request('tasks/get', { taskId }));
        return (got.result as { status?: string } | undefined)?.status === 'completed';
      },
      { timeoutMs: 20_000, what: 'the big task to complete' },
    );
  } finally {
    setup.close();
  }
});

after(async () => {
  await child?.kill('SIGTERM');
  await dir?.remove();
});

/** Another client, answered. */
async function otherClientAnswered(): Promise<void> {
  const other = await RawWs.open(wsUrl);
  try {
    const answer = await other.call(request('tools/list'));
    assert.ok('result' in answer, JSON.stringify(answer));
  } finally {
    other.close();
  }
}

describe('WebSocket outbound budget', () => {
  it('closes a client that does not read (even answering pings), bounds RSS growth, keeps serving others', async () => {
    const pid = child.process.pid!;
    global.gc?.();
    const before = await rssOf(pid);
    let peak = before;
    const sampler = setInterval(
      () =>
        void rssOf(pid).then(
          (rss) => (peak = Math.max(peak, rss)),
          () => {},
        ),
      50,
    );
    const attacker = await openRawWebSocket(port);
    attacker.pause(); // never reads again
    const started = Date.now();
    const logsBefore = child.stderr.length;
    for (let i = 0; i < 100; i++) {
      attacker.write(
        wsFrame(0x1, JSON.stringify({ jsonrpc: '2.0', id: `slow-${i}`, method: 'tasks/get', params: { taskId, _meta: envelope() } })),
      );
    }
    // Unsolicited pongs every 100 ms: they must not keep the socket open.
    const ponger = setInterval(() => attacker.write(wsFrame(0xa, 'still here')), 100);
    try {
      await otherClientAnswered();
      await child.waitForOutput(/websocket: closing a connection of anonymous \(1008\): outbound buffer/, {
        stream: 'stderr',
        timeoutMs: 30_000,
      });
      const closedAfterMs = Date.now() - started;
      await otherClientAnswered();
      const growth = peak - before;
      process.stdout.write(
        `# backpressure: budget ${BUDGET / MiB} MiB, RSS +${(growth / MiB).toFixed(1)} MB, closed after ${closedAfterMs} ms\n`,
      );
      // 100 answers of 3 MB would be 300 MB queued; bounded by the budget (twice it at most) plus transient work.
      assert.ok(growth < 2 * BUDGET + 96 * MiB, `RSS grew ${(growth / MiB).toFixed(1)} MB`);
      assert.equal(child.stderr.slice(logsBefore).match(/closing a connection/g)?.length, 1, child.stderr.slice(logsBefore));
    } finally {
      clearInterval(ponger);
      clearInterval(sampler);
      attacker.destroy();
    }
  });

  it('a client over budget that answers pings but never drains is closed after the grace period', async () => {
    const attacker = await openRawWebSocket(port);
    attacker.pause();
    const logsBefore = child.stderr.length;
    // Two answers of 3 MB: over the 1 MiB budget but under twice it once the kernel buffers took their share.
    for (let i = 0; i < 2; i++) {
      attacker.write(
        wsFrame(0x1, JSON.stringify({ jsonrpc: '2.0', id: `grace-${i}`, method: 'tasks/get', params: { taskId, _meta: envelope() } })),
      );
    }
    const ponger = setInterval(() => attacker.write(wsFrame(0xa)), 100);
    try {
      await waitFor(() => /closing a connection of anonymous \(1008\)/.test(child.stderr.slice(logsBefore)), {
        timeoutMs: 30_000,
        what: 'the close',
      });
      await otherClientAnswered();
    } finally {
      clearInterval(ponger);
      attacker.destroy();
    }
  });

  it('ends an SSE listen stream whose client does not read it once past the budget', async () => {
    // Tasks still working, so their completions (each carrying the 3 MB result) reach the stream later.
    const setup = await RawWs.open(wsUrl);
    const ids: string[] = [];
    try {
      for (let i = 0; i < 6; i++) {
        const created = await setup.call(
          request('tools/call', { name: 'sleep', arguments: { ms: 1_500, message: `${i}`.repeat(RESULT_BYTES) } }),
        );
        ids.push((created.result as { taskId: string }).taskId);
      }
    } finally {
      setup.close();
    }
    const message = request('subscriptions/listen', { notifications: { taskIds: ids } });
    const body = JSON.stringify(message);
    const headers = {
      ...standardHeaders('subscriptions/listen', message.params as Record<string, unknown>),
      'content-length': String(Buffer.byteLength(body)),
    };
    const url = new URL(httpUrl);
    const logsBefore = child.stderr.length;
    const reader = connect({ host: '127.0.0.1', port: Number(url.port) });
    await new Promise((resolve) => reader.once('connect', resolve));
    reader.on('error', () => {});
    reader.write(
      `POST ${url.pathname} HTTP/1.1\r\nHost: 127.0.0.1:${url.port}\r\n${Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('')}\r\n${body}`,
    );
    reader.pause(); // never reads the stream
    try {
      await waitFor(() => /http: ending a listen stream of anonymous: outbound buffer/.test(child.stderr.slice(logsBefore)), {
        timeoutMs: 30_000,
        what: 'the listen stream to be ended',
      });
      await otherClientAnswered();
    } finally {
      reader.destroy();
    }
  });
});
