/**
 * A status (and result) is visible through `tasks/get`,
 * listen pushes and the runtime API only once it is durable, whatever the
 * write path did. The old Persister's `flushed()` waited only for the write
 * in flight, not for one that had failed and sat on its retry timer: a task
 * whose `completed` write hit a full disk answered `completed` while the
 * store still said `working` (kill -9 then brought it back `failed`).
 *
 * Every store, through the fault-injecting wrapper: the terminal write fails
 * (ENOSPC, EIO) and the task must keep answering its stored state until the
 * retry lands; a slow write is not shown before it lands either.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { ANONYMOUS_PRINCIPAL, createRuntime, silentLogger, type TaskRecord } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { FaultyTaskStore, type FaultEffect } from '../support/FaultyTaskStore.js';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { STORE_KINDS, storeSite, type StoreSite } from '../support/storeKinds.js';

/** Lets queued callbacks and I/O run a few rounds, so a wrongly early answer would have arrived. */
const settle = async (rounds = 20) => {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
};
const until = async (check: () => boolean | Promise<boolean>) => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 5));
};

type Raw = { result?: Record<string, unknown>; error?: unknown };

for (const kind of STORE_KINDS) {
  describe(`${kind}: a status is visible only once durable, whatever the write did`, () => {
    let site: StoreSite;
    before(async () => (site = await storeSite(kind)));
    after(() => site.cleanup());

    const scenario = async (effect: FaultEffect, outcome: 'completed' | 'failed') => {
      const store = new FaultyTaskStore(site.make());
      const runtime = createRuntime({ store, logger: silentLogger, reapIntervalMs: 0 });
      const finishers = new Map<string, () => void>();
      runtime.tool('gated', { taskBehavior: 'always', inputSchema: z.object({ key: z.string() }) }, async ({ key }) => {
        await new Promise<void>((resolve) => finishers.set(key, resolve));
        if (outcome === 'failed') throw new Error('the tool failed');
        return `finished ${key}`;
      });
      const pushed: TaskRecord[] = [];
      runtime.onTaskChange((record) => pushed.push(record));
      await runtime.start();
      const http = await listenHttp(runtime, { port: 0 });
      let client: ConnectedClient | undefined;
      try {
        client = await connect({ kind: 'http', url: http.url });
        const key = `${kind}-${JSON.stringify(effect)}-${outcome}`;
        const created = (await client.raw({
          method: 'tools/call',
          params: { name: 'gated', arguments: { key }, _meta: envelope() },
        } as never)) as unknown as Raw;
        const taskId = created.result!.taskId as string;
        await until(() => finishers.has(key));
        const fault = store.inject({ effect, ops: ['put'], when: (write) => write.taskId === taskId && write.record?.status === outcome });
        finishers.get(key)!();
        await until(() => fault.hits >= 1);

        const wireGet = async () =>
          ((await client!.raw({ method: 'tasks/get', params: { taskId, _meta: envelope() } } as never)) as unknown as Raw).result!;
        let flushedEarly = false;
        const flushed = runtime.flushed().then(() => (flushedEarly = true));
        // Several reads while the write is refused (and waiting for its retry, or still hanging/slow).
        for (let i = 0; i < 3; i++) {
          const stored = await store.inner.get(taskId);
          assert.equal(stored?.status, 'working', 'the store still holds the working record');
          assert.equal((await wireGet()).status, 'working', 'tasks/get showed a status that is not durable');
          assert.equal(
            (await runtime.getTask(taskId, ANONYMOUS_PRINCIPAL)).status,
            'working',
            'runtime.getTask showed a status that is not durable',
          );
          await settle();
        }
        assert.ok(
          !pushed.some((record) => record.taskId === taskId && record.status === outcome),
          'a listener was told before the write landed',
        );
        assert.equal(flushedEarly, false, 'runtime.flushed() resolved while a change was still unwritten');

        fault.remove();
        await flushed;
        assert.equal((await store.inner.get(taskId))?.status, outcome);
        const shown = await wireGet();
        assert.equal(shown.status, outcome);
        await until(() => pushed.some((record) => record.taskId === taskId && record.status === outcome));
      } finally {
        store.heal();
        await client?.close();
        await http.close();
        await runtime.close();
      }
    };

    it('ENOSPC on the completed write: tasks/get, getTask and listeners show working until the retry stores it', () =>
      scenario('ENOSPC', 'completed'));
    it('EIO on the failed write: the same, for a tool that throws', () => scenario('EIO', 'failed'));
    it('a hanging write: nothing is shown until it lands', () => scenario('hang', 'completed'));
  });
}
