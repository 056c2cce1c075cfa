/**
 * Ownership is checked before a record is loaded, in every
 * durable store. Over real HTTP, with a principal per request: alice's
 * completed task has its stored record corrupted behind the store's back.
 * Alice's own `tasks/get` now fails (the store reads and parses her record);
 * mallory's `tasks/get` of the same id answers exactly what an unknown id
 * answers — so the store never read or parsed it for her, whatever its
 * size. (Before: mallory got the internal error of parsing alice's record.)
 */
import assert from 'node:assert/strict';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import demoTools from '../../examples/demo/tools.js';
import { createRuntime, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { LowdbTaskStore, PostgresTaskStore, SqliteTaskStore, type TaskStore } from '../../src/store/index.js';
import { postJsonRpc } from '../support/httpRaw.js';
import { freshSchema, pgQuery, TEST_PG_URL } from '../support/postgres.js';
import { tempDir, waitFor } from '../support/processes.js';
import { requireSqliteDriver } from '../../src/store/sqliteDriver.js';

const silent = { info: () => {}, error: () => {} };

interface Site {
  store: TaskStore;
  corrupt(taskId: string): Promise<void>;
  cleanup: () => Promise<void>;
}

const SITES: Record<string, () => Promise<Site>> = {
  async lowdb() {
    const dir = await tempDir('taskvisor-foreign-lowdb-');
    return {
      store: new LowdbTaskStore({ dir: dir.path, onCorrupt: () => {} }),
      async corrupt(taskId) {
        const tasks = join(dir.path, 'tasks');
        for (const shard of await readdir(tasks)) {
          if ((await readdir(join(tasks, shard))).includes(`${taskId}.json`))
            await writeFile(join(tasks, shard, `${taskId}.json`), '{"broken');
        }
      },
      cleanup: () => dir.remove(),
    };
  },
  async sqlite() {
    const dir = await tempDir('taskvisor-foreign-sqlite-');
    const file = join(dir.path, 'tasks.sqlite');
    return {
      store: new SqliteTaskStore({ file }),
      async corrupt(taskId) {
        const Database = requireSqliteDriver();
        const db = new Database(file);
        try {
          db.prepare('UPDATE tasks SET record = ? WHERE task_id = ?').run('{"broken', taskId);
        } finally {
          db.close();
        }
      },
      cleanup: () => dir.remove(),
    };
  },
  async postgres() {
    const { schema, drop } = await freshSchema('tv_foreign');
    return {
      store: new PostgresTaskStore({ url: TEST_PG_URL, schema, poolSize: 2 }),
      async corrupt(taskId) {
        await pgQuery(`UPDATE "${schema}".tasks SET record = $1 WHERE task_id = $2`, ['{"broken', taskId]);
      },
      cleanup: drop,
    };
  },
};

describe('a foreign task id costs what an unknown one costs', () => {
  const cleanups: Array<() => Promise<void>> = [];
  after(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  for (const [kind, makeSite] of Object.entries(SITES)) {
    // A corrupt record is quarantined; the quarantine keeps its owner, so for mallory it stays unknown.
    it(`${kind}: another principal's corrupt record answers as an unknown id; its owner's get proves it was corrupt`, async () => {
      const site = await makeSite();
      cleanups.push(site.cleanup);
      const runtime: TaskvisorRuntime = createRuntime({ store: site.store, promoteAfterMs: 0, logger: silent });
      runtime.use(...demoTools);
      await runtime.start();
      cleanups.unshift(() => runtime.close());
      const listener = await listenHttp(runtime, {
        port: 0,
        authenticate: (request) => ({ id: request.headers.get('x-principal') ?? 'nobody' }),
      });
      const as = (principal: string) => ({ headers: { 'x-principal': principal } });
      const created = await postJsonRpc(
        listener.url,
        'tools/call',
        { name: 'sleep', arguments: { ms: 0, message: 'x'.repeat(100_000) } },
        as('alice'),
      );
      const taskId = (created.message?.result as { taskId: string }).taskId;
      await waitFor(
        async () =>
          ((await postJsonRpc(listener.url, 'tasks/get', { taskId }, as('alice'))).message?.result as { status?: string })?.status ===
          'completed',
        { timeoutMs: 10_000, what: 'the task to complete' },
      );
      // Let the live actor go: the next gets are served from the store.
      await waitFor(
        async () => {
          await site.corrupt(taskId);
          const error = (await postJsonRpc(listener.url, 'tasks/get', { taskId }, as('alice'))).message?.error as
            { code?: number } | undefined;
          // Alice is told it was set aside (-32603), not that it is unknown.
          return error?.code === -32603;
        },
        { timeoutMs: 10_000, what: "alice's get to read the corrupt record" },
      );
      const unknown = await postJsonRpc(listener.url, 'tasks/get', { taskId: 'f'.repeat(32) }, as('mallory'));
      const foreign = await postJsonRpc(listener.url, 'tasks/get', { taskId }, as('mallory'));
      assert.ok(unknown.message?.error, unknown.text);
      assert.deepEqual(foreign.message?.error, unknown.message?.error, `foreign ${foreign.text} vs unknown ${unknown.text}`);
      assert.equal(foreign.status, unknown.status);
    });
  }
});
