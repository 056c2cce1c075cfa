/**
 * A malformed record never stops start-up: a record without `ttlMs` must not
 * make `start()` throw, and unreadable records must not stay unfinished for
 * ever answering -32603 with a file path and the file's bytes. On every
 * durable store such a record is quarantined (kept, never deleted), logged
 * once with its id, answers a stable error without internals, and the rest
 * recover.
 * `taskvisor tasks check [--repair]` reports (and sets aside) such records.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { requireSqliteDriver } from '../../src/store/sqliteDriver.js';
import { z } from 'zod';
import { createRuntime, type Logger } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { LowdbTaskStore, PostgresTaskStore, SqliteTaskStore, type TaskStore } from '../../src/store/index.js';
import { locateTask } from '../../src/store/taskFiles.js';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';
import { connect, envelope } from '../support/extTasksClient.js';
import { freshSchema, pgQuery, TEST_PG_URL } from '../support/postgres.js';
import { CLI, runNode } from '../support/processes.js';
import { makeRecord } from './fixtures.js';

/** better-sqlite3 as the stores load it (the major this Node runs). */
const Database = requireSqliteDriver();

const newId = () => randomBytes(16).toString('hex');
/** Bytes cut short by a crash: not JSON, but they still start as every record does, so their owner can be told. */
const garbage = (taskId: string) => `{"taskId":${JSON.stringify(taskId)},"owner":"anonymous","tool":"sleepy","status":"work`;

interface Site {
  /** `role` names the postgres instance: the seeding one is gone when the runtime's starts, so its tasks are adopted. */
  make(onCorrupt: (where: string, error: Error) => void, role?: string): TaskStore;
  /** Writes raw bytes as the stored record of `taskId` (the store must be closed or not own the data). */
  plant(taskId: string, bytes: string, status: string): Promise<void>;
  config?: string;
  cleanup(): Promise<void>;
}

async function site(kind: 'lowdb' | 'sqlite' | 'postgres'): Promise<Site> {
  if (kind === 'postgres') {
    const { schema, drop } = await freshSchema('tv_damaged');
    return {
      make: (onCorrupt, role = 'runtime') =>
        new PostgresTaskStore({ url: TEST_PG_URL, schema, instanceId: `${role}-${schema}`, poolSize: 4, leaseMs: 1000, onCorrupt }),
      plant: async (taskId, bytes, status) =>
        void (await pgQuery(
          `INSERT INTO "${schema}".tasks (task_id, owner, tool, status, created_at, last_updated_at, ttl_ms, version, machine_version, record)
           VALUES ($1, 'anonymous', 'sleepy', $2, $3, $3, NULL, 1, 1, $4)`,
          [taskId, status, Date.now(), bytes],
        )),
      cleanup: drop,
    };
  }
  const dir = await mkdtemp(join(tmpdir(), `taskvisor-damaged-${kind}-`));
  if (kind === 'lowdb') {
    const storeDir = join(dir, 'store');
    return {
      make: (onCorrupt) => new LowdbTaskStore({ dir: storeDir, onCorrupt }),
      plant: async (taskId, bytes) => {
        const file = locateTask(join(storeDir, 'tasks'), taskId)!.file;
        await mkdir(dirname(file), { recursive: true });
        await writeFile(file, bytes);
      },
      config: `store:\n  kind: lowdb\n  dir: ${JSON.stringify(storeDir)}\n`,
      cleanup: () => rm(dir, { recursive: true, force: true }),
    };
  }
  const file = join(dir, 'tasks.sqlite');
  return {
    make: (onCorrupt) => new SqliteTaskStore({ file, onCorrupt }),
    plant: async (taskId, bytes, status) => {
      const db = new Database(file);
      try {
        db.prepare(
          `INSERT INTO tasks (task_id, owner, tool, status, created_at, last_updated_at, ttl_ms, version, machine_version, record)
           VALUES (?, 'anonymous', 'sleepy', ?, ?, ?, NULL, 1, 1, ?)`,
        ).run(taskId, status, Date.now(), Date.now(), bytes);
      } finally {
        db.close();
      }
    },
    config: `store:\n  kind: sqlite\n  file: ${JSON.stringify(file)}\n`,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A stored record that parses but lacks `ttlMs` (the reported sqlite row). */
function withoutTtl(taskId: string): string {
  const { ttlMs: _missing, ...rest } = makeRecord({ taskId, owner: 'anonymous', tool: 'sleepy' });
  return JSON.stringify(rest);
}

for (const kind of ['lowdb', 'sqlite', 'postgres'] as const) {
  describe(`${kind}: damaged records are quarantined, never fatal`, () => {
    it('start() recovers the rest; each damaged id is logged once and answers a stable error; bytes are kept', async () => {
      const s = await site(kind);
      const valid = makeRecord({ taskId: newId(), owner: 'anonymous', tool: 'sleepy' });
      const invalid = newId();
      const unreadable = newId();
      try {
        // The schema (or folder) exists, with one healthy unfinished task in it.
        const seed = s.make(() => undefined, 'seed');
        await seed.open();
        await seed.create(valid);
        await seed.ownership?.leave();
        await seed.close();
        await s.plant(invalid, withoutTtl(invalid), 'working');
        await s.plant(unreadable, garbage(unreadable), 'working');

        const logged: string[] = [];
        const logger: Logger = { info: () => {}, error: (message) => logged.push(message) };
        const store = s.make((where, error) => logged.push(`corrupt ${where}: ${error.message}`));
        const runtime = createRuntime({ store, logger, reapIntervalMs: 0 });
        runtime.tool('sleepy', { taskBehavior: 'always', inputSchema: z.object({}) }, () => 'never runs');
        await runtime.start();
        const http = await listenHttp(runtime, { port: 0 });
        const client = await connect({ kind: 'http', url: http.url });
        try {
          // The healthy task was recovered (ended by the restart: its tool does not replay).
          const until = async <T>(probe: () => Promise<T | undefined>) => {
            for (;;) {
              const value = await probe();
              if (value !== undefined) return value;
              await new Promise((resolve) => setTimeout(resolve, 20));
            }
          };
          await until(async () => ((await store.get(valid.taskId))?.status === 'failed' ? true : undefined));
          await until(async () => ((await store.listQuarantined()).length === 2 ? true : undefined));

          const get = async (taskId: string) =>
            (await client.raw({ method: 'tasks/get', params: { taskId, _meta: envelope() } } as never)) as unknown as {
              error?: { code: number; message: string; data?: unknown };
            };
          for (const taskId of [invalid, unreadable]) {
            for (let round = 0; round < 2; round++) {
              const { error } = await get(taskId);
              assert.equal(error?.code, -32603, `tasks/get ${taskId}: ${JSON.stringify(error)}`);
              assert.match(error.message, /cannot read this task's stored record; it was set aside/);
              assert.doesNotMatch(JSON.stringify(error), /\/tmp|tasks\.sqlite|ttlMs|not json|cut short|postgres:/);
            }
            // Logged once with its id, however often it is asked for.
            assert.equal(logged.filter((line) => line.includes(taskId)).length, 1, `log lines for ${taskId}:\n${logged.join('\n')}`);
          }
          // Kept as stored, never deleted.
          const setAside = new Map((await store.listQuarantined()).map((entry) => [entry.taskId, entry]));
          assert.equal(JSON.parse(setAside.get(invalid)!.stored).ttlMs, undefined);
          assert.equal(JSON.parse(setAside.get(invalid)!.stored).taskId, invalid);
          assert.equal(setAside.get(unreadable)!.stored, garbage(unreadable));
          // Each keeps its owner: only that principal is told it was set aside (I-7).
          assert.equal(setAside.get(invalid)!.owner, 'anonymous');
          assert.equal(setAside.get(unreadable)!.owner, 'anonymous');
          assert.equal(
            (await store.list()).some((record: TaskRecord) => record.taskId === invalid || record.taskId === unreadable),
            false,
          );
        } finally {
          await client.close();
          await http.close();
          await runtime.close();
        }
      } finally {
        await s.cleanup();
      }
    });

    if (kind !== 'postgres')
      it('taskvisor tasks check reports damaged records (exit 1); --repair quarantines them (kept); check is clean after', async () => {
        const s = await site(kind);
        const invalid = newId();
        const unreadable = newId();
        try {
          const seed = s.make(() => undefined);
          await seed.open();
          await seed.create(makeRecord({ taskId: newId(), owner: 'anonymous' }));
          await seed.close();
          await s.plant(invalid, withoutTtl(invalid), 'working');
          await s.plant(unreadable, garbage(unreadable), 'working');
          const config = join(tmpdir(), `taskvisor-check-${newId()}.yaml`);
          await writeFile(config, s.config!);
          try {
            const check = await runNode([CLI, 'tasks', 'check', '--config', config]);
            assert.equal(check.code, 1, check.stderr);
            // Every store's record check meets the invalid record as it reads it (unreadable, named by its task id).
            assert.match(check.stdout, new RegExp(`${invalid}[^\\t\\n]*\\t(invalid|unreadable)\\t[^\\n]*ttlMs`));
            assert.match(check.stdout, /unreadable/);
            assert.match(check.stdout, /3 records checked: 2 damaged in the live set, 0 in quarantine/);

            const repair = await runNode([CLI, 'tasks', 'check', '--config', config, '--repair']);
            assert.equal(repair.code, 0, repair.stderr);
            assert.match(repair.stdout, new RegExp(`${invalid}[^\\t\\n]*\\t(invalid|unreadable), now quarantined`));

            const after = await runNode([CLI, 'tasks', 'check', '--config', config, '--json']);
            assert.equal(after.code, 0, after.stderr);
            const report = JSON.parse(after.stdout) as { damaged: number; findings: { taskId: string; state: string }[] };
            assert.equal(report.damaged, 0);
            assert.deepEqual(report.findings.map((finding) => finding.state).sort(), ['quarantined', 'quarantined']);
            if (kind === 'lowdb') {
              // The unreadable file is kept byte for byte in the quarantine folder.
              const store = s.make(() => undefined);
              await store.open();
              const kept = (await store.listQuarantined()).map((entry) => entry.stored);
              await store.close();
              assert.ok(kept.includes(garbage(unreadable)));
            }
          } finally {
            await rm(config, { force: true });
          }
        } finally {
          await s.cleanup();
        }
      });
  });
}
