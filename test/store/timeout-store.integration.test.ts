/**
 * TimeoutTaskStore (store operation timeouts) with one timer for every
 * operation in flight: each hung operation still fails at its own timeout,
 * in order, while the ones that answer in time are untouched, and a settled
 * store keeps no timer holding the process open.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { StoreTimeoutError } from '../../src/core/errors.js';
import { TimeoutTaskStore } from '../../src/store/TimeoutTaskStore.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';

/** A store whose reads of ids starting with 'h' never answer (a stalled database). */
class StallingStore extends MemoryTaskStore {
  override get(taskId: string, owner?: string): Promise<TaskRecord | undefined> {
    return taskId.startsWith('h') ? new Promise(() => undefined) : super.get(taskId, owner);
  }
}

const outcome = (promise: Promise<unknown>, t0: number) =>
  promise.then(
    () => ({ ok: true, timeout: false, at: Date.now() - t0 }),
    (error: unknown) => ({ ok: false, timeout: error instanceof StoreTimeoutError, at: Date.now() - t0 }),
  );

describe('TimeoutTaskStore', () => {
  it('fails each hung operation at its own timeout and lets the others answer', async () => {
    const store = new TimeoutTaskStore(new StallingStore(), 200);
    await store.open();
    const t0 = Date.now();
    const first = outcome(store.get('h1'), t0);
    // The second starts later than the first (by about half a timeout), so the two timeouts are told apart.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const secondStart = Date.now() - t0;
    let secondSettled = false;
    const second = outcome(store.get('h2'), t0).finally(() => (secondSettled = true));
    // Operations started while the first two hang answer at once: before the second's timeout, however slow the host.
    const quick = await outcome(store.get('c'.repeat(32)), t0);
    assert.equal(quick.ok, true);
    assert.equal(secondSettled, false, 'answered before the hung operation started just before it timed out');
    const [a, b] = await Promise.all([first, second]);
    assert.deepEqual([a.ok, a.timeout, b.ok, b.timeout], [false, true, false, true]);
    // Each at its own timeout (200 ms after its start, never sooner), the second not dragged to the first's.
    assert.ok(a.at >= 195, `first failed after ${a.at} ms`);
    assert.ok(b.at - secondStart >= 195, `second failed ${b.at - secondStart} ms after its start`);
    assert.ok(b.at >= a.at, 'the second failed after the first');
    await store.close();
  });

  it('holds no timer open once nothing is in flight', () => {
    // A child process: it must exit as soon as its store operations are done, not when a timeout timer would fire.
    const script = `
      import { TimeoutTaskStore } from './src/store/TimeoutTaskStore.ts';
      import { MemoryTaskStore } from './src/store/index.ts';
      const store = new TimeoutTaskStore(new MemoryTaskStore(), 60_000);
      await store.open();
      await store.get('a'.repeat(32));
      globalThis.startedAt = Date.now();
      process.on('exit', () => console.log('exited after', Date.now() - globalThis.startedAt));
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(child.status, 0, child.stderr);
    const ms = Number(/exited after (\d+)/.exec(child.stdout)?.[1]);
    assert.ok(ms < 5_000, `exited ${ms} ms after its last operation`);
  });
});
