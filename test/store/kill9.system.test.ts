/**
 * kill -9 durability (T-07, I-1): every create the store acknowledged before
 * the process was SIGKILLed must be there when the store is opened again
 * (lowdb folder, sqlite file).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { it, type TestContext } from 'node:test';
import { LowdbTaskStore } from '../../src/store/LowdbTaskStore.js';
import { SqliteTaskStore } from '../../src/store/SqliteTaskStore.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WRITER = fileURLToPath(new URL('./fixtures/kill9-writer.ts', import.meta.url));
const TARGET_ACKS = 400;
const MAX_WRITE_MS = 3_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Runs the writer (`kill9-writer.ts ...args`) until it has acknowledged
 * {@link TARGET_ACKS} creates (or {@link MAX_WRITE_MS} passed), SIGKILLs it
 * and returns the acknowledged ids.
 */
async function ackedBeforeSigkill(args: readonly string[], t: TestContext): Promise<string[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', WRITER, ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));

  const acked: string[] = [];
  let buffered = '';
  let killTimer: NodeJS.Timeout | undefined;
  const kill = (): void => {
    clearTimeout(killTimer);
    child.kill('SIGKILL');
  };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    // Only complete lines count: a line cut by the kill was never fully acknowledged.
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line === 'READY') killTimer = setTimeout(kill, MAX_WRITE_MS);
      else if (line.startsWith('ACK ')) {
        const id = line.slice(4);
        assert.match(id, UUID);
        acked.push(id);
        if (acked.length === TARGET_ACKS) kill();
      }
    }
  });

  const { code, signal } = await exited;
  clearTimeout(killTimer);
  assert.equal(signal, 'SIGKILL', `writer exited on its own (code ${code}): ${stderr}`);
  assert.ok(acked.length > 0, `writer acknowledged nothing before the kill: ${stderr}`);
  t.diagnostic(`${acked.length} creates acknowledged before SIGKILL`);
  return acked;
}

it('every acknowledged lowdb create survives SIGKILL of the writer', { timeout: 20_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'taskvisor-lowdb-'));
  try {
    const acked = await ackedBeforeSigkill([dir], t);

    const corrupt: string[] = [];
    const store = new LowdbTaskStore({ dir, onCorrupt: (path, error) => corrupt.push(`${path}: ${error.message}`) });
    await store.open();
    try {
      const missing: string[] = [];
      for (const id of acked) {
        const record = await store.get(id);
        if (record?.status !== 'working') missing.push(id);
      }
      assert.deepEqual(missing, [], `${missing.length} of ${acked.length} acknowledged creates were lost`);
      assert.deepEqual(corrupt, []);
      const stored = await store.listNonTerminal();
      assert.ok(stored.length >= acked.length);
    } finally {
      await store.close();
    }
    // open() removed whatever temp files the kill left behind.
    for (const shard of await readdir(join(dir, 'tasks'))) {
      const leftovers = (await readdir(join(dir, 'tasks', shard))).filter((name) => name.endsWith('.tmp'));
      assert.deepEqual(leftovers, [], `temp files left in shard ${shard}`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

it('every acknowledged sqlite create survives SIGKILL of the writer', { timeout: 20_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'taskvisor-sqlite-'));
  const file = join(dir, 'tasks.sqlite');
  try {
    const acked = await ackedBeforeSigkill([file, 'sqlite'], t);

    const corrupt: string[] = [];
    const store = new SqliteTaskStore({ file, onCorrupt: (taskId, error) => corrupt.push(`${taskId}: ${error.message}`) });
    await store.open();
    try {
      const missing: string[] = [];
      for (const id of acked) {
        const record = await store.get(id);
        if (record?.status !== 'working') missing.push(id);
      }
      assert.deepEqual(missing, [], `${missing.length} of ${acked.length} acknowledged creates were lost`);
      const stored = await store.listNonTerminal();
      assert.deepEqual(corrupt, []);
      assert.ok(stored.length >= acked.length);
    } finally {
      await store.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
