/**
 * The slow-reader attack (a client that never reads what it asked for) against a real `taskvisor serve`
 * child: a WebSocket client that never reads asks 100 times for a task with
 * a 3 MB result and sends unsolicited pongs, while another client keeps
 * asking `tools/list`. Measures the server's RSS growth (peak − before),
 * whether and when the attacker's connection was closed, and how many of
 * the other client's requests were answered.
 *
 * Run once with the outbound budget and once with the budget out of reach
 * (1 GiB, grace at the timer maximum): the baseline of the same run.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { openRawWebSocket, rssOf, wsFrame } from '../test/support/rawSocket.js';

const CLI = fileURLToPath(new URL('../bin/taskvisor.js', import.meta.url));
const DEMO_TOOLS = fileURLToPath(new URL('../examples/demo/tools.ts', import.meta.url));
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};

export interface SlowReaderResult {
  budgetBytes: number;
  resultBytes: number;
  requests: number;
  rssBefore: number;
  rssGrowth: number;
  /** ms from the first request to the server's close; null when it never closed within the attack. */
  closedAfterMs: number | null;
  otherAsked: number;
  otherAnswered: number;
}

export async function runSlowReader(options: {
  budgetBytes: number;
  graceMs: number;
  resultBytes?: number;
  requests?: number;
  attackMs?: number;
}): Promise<SlowReaderResult> {
  const resultBytes = options.resultBytes ?? 3 * 1024 * 1024;
  const requests = options.requests ?? 100;
  const attackMs = options.attackMs ?? 10_000;
  const dir = await mkdtemp(join(tmpdir(), 'taskvisor-bench-slow-'));
  const config = join(dir, 'taskvisor.yaml');
  await writeFile(
    config,
    [
      'store: { kind: memory }',
      `tools: [${JSON.stringify(DEMO_TOOLS)}]`,
      'tasks: { promoteAfterMs: 0 }',
      `limits: { maxOutboundBufferBytes: ${options.budgetBytes}, outboundGraceMs: ${options.graceMs} }`,
      '',
    ].join('\n'),
  );
  const child = spawn(process.execPath, [CLI, 'serve', '--config', config, '--ws', '127.0.0.1:0'], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start: ${stderr}`)), 60_000);
      const check = () => {
        const match = /serving MCP over WebSocket at (\S+)\n/.exec(stderr);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      };
      child.stderr.on('data', check);
      child.once('exit', () => reject(new Error(`server exited: ${stderr}`)));
    });
    const port = Number(new URL(url).port);
    const reader = await openClient(url);
    const created = await reader.call('tools/call', { name: 'sleep', arguments: { ms: 0, message: 'x'.repeat(resultBytes) } });
    const taskId = (created.result as { taskId: string }).taskId;
    for (;;) {
      const got = await reader.call('tasks/get', { taskId });
      if ((got.result as { status?: string }).status === 'completed') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    const rssBefore = await rssOf(child.pid!);
    let peak = rssBefore;
    const sampler = setInterval(
      () =>
        void rssOf(child.pid!).then(
          (rss) => (peak = Math.max(peak, rss)),
          () => {},
        ),
      50,
    );
    const attacker = await openRawWebSocket(port);
    attacker.pause();
    attacker.on('error', () => {});
    const started = Date.now();
    const logsBefore = stderr.length;
    for (let i = 0; i < requests; i++) {
      attacker.write(wsFrame(0x1, JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tasks/get', params: { taskId, _meta: ENVELOPE } })));
    }
    const ponger = setInterval(() => attacker.write(wsFrame(0xa)), 200);
    let closedAfterMs: number | null = null;
    let otherAsked = 0;
    let otherAnswered = 0;
    while (Date.now() - started < attackMs) {
      otherAsked++;
      const answered = await Promise.race([
        reader.call('tools/list', {}).then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1_000)),
      ]);
      if (answered) otherAnswered++;
      if (closedAfterMs === null && /closing a connection/.test(stderr.slice(logsBefore))) closedAfterMs = Date.now() - started;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    clearInterval(ponger);
    clearInterval(sampler);
    attacker.destroy();
    reader.close();
    return {
      budgetBytes: options.budgetBytes,
      resultBytes,
      requests,
      rssBefore,
      rssGrowth: peak - rssBefore,
      closedAfterMs,
      otherAsked,
      otherAnswered,
    };
  } finally {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

/** A minimal reading client: one request at a time by id. */
async function openClient(url: string) {
  const socket = new WebSocket(url, ['mcp'], { maxPayload: 64 * 1024 * 1024 });
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  const waiting = new Map<number, (message: Record<string, unknown>) => void>();
  socket.on('message', (data) => {
    const message = JSON.parse(data.toString()) as Record<string, unknown>;
    waiting.get(message.id as number)?.(message);
    waiting.delete(message.id as number);
  });
  let next = 1_000_000;
  return {
    call(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
      const id = next++;
      return new Promise((resolve) => {
        waiting.set(id, resolve);
        socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: ENVELOPE } }));
      });
    },
    close: () => socket.close(),
  };
}
