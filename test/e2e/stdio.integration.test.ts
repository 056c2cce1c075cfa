/**
 * The e2e conformance scenarios over a real stdio child process
 * (`node --import tsx test/e2e/fixtures/stdio-server.ts`), plus the stdio
 * rule that stdout carries protocol only.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { envelope } from '../support/extTasksClient.js';
import { registerScenarios } from './scenarios.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/stdio-server.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

registerScenarios(
  'stdio',
  async () => ({
    // Each connect() spawns its own child; client.close() ends it.
    endpoint: { kind: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: REPO_ROOT },
    close: async () => {},
  }),
  ({ connected }) => {
    describe('stdio transport hygiene', () => {
      it('the client transport saw no malformed stdout line; the child logs on stderr', () => {
        const client = connected();
        assert.deepEqual(client.transportErrors.map(String), []);
        assert.match(client.stderr.join(''), /e2e stdio server ready/);
      });
    });
  },
);

/** Runs `body` against a fresh child serving the fixture over raw stdin/stdout lines. */
async function withChild(
  body: (child: {
    send: (message: object) => void;
    lines: () => string[];
    waitForLines: (count: number) => Promise<void>;
    stderr: () => string;
  }) => Promise<void>,
) {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const lines = () => stdout.split('\n').filter((line) => line.length > 0);
  try {
    await body({
      send: (message) => child.stdin.write(`${JSON.stringify(message)}\n`),
      lines,
      stderr: () => stderr,
      waitForLines: async (count) => {
        // The child compiles the runtime with tsx first: 1-2 s idle, past 10 s at load average 15.
        const deadline = Date.now() + 90_000;
        while (lines().length < count) {
          if (Date.now() > deadline) assert.fail(`expected ${count} stdout lines, got: ${stdout}\nstderr: ${stderr}`);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      },
    });
  } finally {
    child.stdin.end();
    await new Promise((resolve) => {
      if (child.exitCode !== null) return resolve(undefined);
      child.once('exit', resolve);
      setTimeout(() => child.kill(), 3000).unref();
    });
  }
}

describe('stdio: raw child process', { concurrency: true }, () => {
  it('every stdout line of the child is a JSON-RPC message; logs go to stderr', async () => {
    await withChild(async ({ send, lines, waitForLines, stderr }) => {
      send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope() } });
      await waitForLines(1);
      send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'sleep', arguments: { ms: 300 }, _meta: envelope() } });
      await waitForLines(2);
      const created = JSON.parse(lines()[1]!) as { result: { resultType: string; taskId: string } };
      assert.equal(created.result.resultType, 'task');
      send({ jsonrpc: '2.0', id: 3, method: 'tasks/get', params: { taskId: created.result.taskId, _meta: envelope() } });
      send({ jsonrpc: '2.0', id: 4, method: 'tasks/get', params: { taskId: 'f'.repeat(32), _meta: envelope() } });
      await waitForLines(4);
      for (const line of lines()) {
        const message = JSON.parse(line) as { jsonrpc?: unknown };
        assert.equal(message.jsonrpc, '2.0', line);
      }
      assert.match(stderr(), /e2e stdio server ready/);
    });
  });

  it('T-30: subscriptions/listen asking for taskIds without the extension is -32021', async () => {
    await withChild(async ({ send, lines, waitForLines }) => {
      send({
        jsonrpc: '2.0',
        id: 'l1',
        method: 'subscriptions/listen',
        params: { notifications: { taskIds: ['f'.repeat(32)] }, _meta: envelope({}) },
      });
      await waitForLines(1);
      const first = JSON.parse(lines()[0]!) as { id?: unknown; error?: { code: number } };
      assert.equal(first.id, 'l1', lines()[0]);
      assert.equal(first.error?.code, -32021, lines()[0]);
    });
  });
});
