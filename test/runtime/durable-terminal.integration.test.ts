/**
 * A finished task is shown (tasks/get, listen pushes) only once its terminal
 * record is durable: a client that saw `completed` and then lost the server
 * to kill -9 must find the task completed after the restart. A store whose
 * terminal puts wait for a gate makes the window observable without timing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { ANONYMOUS_PRINCIPAL, createRuntime, silentLogger, type TaskRecord } from '../../src/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { connect, envelope } from '../support/extTasksClient.js';
import { listenHttp } from '../../src/transports/index.js';

/** A memory store whose writes of a finished record wait until `release()`. */
class GatedTerminalStore extends MemoryTaskStore {
  private opened!: () => void;
  readonly gate = new Promise<void>((resolve) => (this.opened = resolve));
  terminalPutStarted = false;
  release(): void {
    this.opened();
  }
  override async put(record: TaskRecord): Promise<void> {
    if (record.status === 'completed' || record.status === 'failed' || record.status === 'cancelled') {
      this.terminalPutStarted = true;
      await this.gate;
    }
    return super.put(record);
  }
}

/** Lets queued callbacks and I/O run a few rounds, so a wrongly early answer would have arrived. */
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('terminal status becomes visible only once durable', () => {
  it('tasks/get and runtime.getTask show the stored status until the terminal write lands; onTaskChange fires after it', async () => {
    const store = new GatedTerminalStore();
    const runtime = createRuntime({ store, logger: silentLogger, reapIntervalMs: 0 });
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    runtime.tool('quick', { taskBehavior: 'always', inputSchema: z.object({}) }, async () => {
      await done;
      return 'finished';
    });
    const changes: string[] = [];
    runtime.onTaskChange((record) => changes.push(record.status));
    await runtime.start();
    const http = await listenHttp(runtime, { port: 0 });
    const client = await connect({ kind: 'http', url: http.url });
    try {
      const created = (await client.raw({
        method: 'tools/call',
        params: { name: 'quick', arguments: {}, _meta: envelope() },
      } as never)) as unknown as {
        result: { taskId: string };
      };
      const taskId = created.result.taskId;
      finish();
      while (!store.terminalPutStarted) await settle();

      // While the terminal write waits, the task answers its stored state (working), never `completed`;
      // it does not wait for the write either (a hung store must not hang tasks/get).
      const wire = (await client.raw({ method: 'tasks/get', params: { taskId, _meta: envelope() } } as never)) as unknown as {
        result: { status: string };
      };
      assert.equal(wire.result.status, 'working', 'tasks/get showed a status before it was durable');
      assert.equal(
        (await runtime.getTask(taskId, ANONYMOUS_PRINCIPAL)).status,
        'working',
        'runtime.getTask showed a status before it was durable',
      );
      await settle();
      assert.ok(!changes.includes('completed'), `pushed before durable: ${changes.join(',')}`);

      store.release();
      await runtime.flushed();
      assert.equal((await runtime.getTask(taskId, ANONYMOUS_PRINCIPAL)).status, 'completed');
      const after = (await client.raw({ method: 'tasks/get', params: { taskId, _meta: envelope() } } as never)) as unknown as {
        result: { status: string };
      };
      assert.equal(after.result.status, 'completed');
      while (!changes.includes('completed')) await settle();
      assert.equal((await store.get(taskId))?.status, 'completed');
    } finally {
      store.release();
      await client.close();
      await runtime.close();
      await http.close();
    }
  });
});
