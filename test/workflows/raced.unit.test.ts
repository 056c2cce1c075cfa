/**
 * `raced(promise, signal)` (a workflow step's wait on a callee): a lost race
 * leaves the callee's promise handled. A step that reaches its call after
 * its signal fired (the task was dropped while a checkpoint write was
 * pending) gets a callee that rejects with that same reason; unhandled, the
 * rejection would end the process.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { raced } from '../../src/workflows/engine/timeLimits.js';

describe('raced', () => {
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => unhandled.push(reason);
  before(() => process.on('unhandledRejection', record));
  after(() => process.off('unhandledRejection', record));
  /** Node reports unhandled rejections once the microtasks have run: one turn of the event loop. */
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  it('with the signal already aborted: rejects with its reason, and the callee rejecting too is handled', async () => {
    unhandled.length = 0;
    const controller = new AbortController();
    controller.abort();
    const callee = Promise.reject(controller.signal.reason as Error);
    await assert.rejects(raced(callee, controller.signal), { name: 'AbortError' });
    await turn();
    assert.deepEqual(unhandled, []);
  });

  it('aborted during the wait: rejects with the reason, and the callee rejecting later is handled', async () => {
    unhandled.length = 0;
    const controller = new AbortController();
    let fail: (error: Error) => void = () => {};
    const callee = new Promise<never>((_, reject) => (fail = reject));
    const waiting = raced(callee, controller.signal);
    controller.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
    fail(new Error('the callee saw the abort'));
    await turn();
    assert.deepEqual(unhandled, []);
  });

  it('not aborted: settles as the callee does', async () => {
    const controller = new AbortController();
    assert.equal(await raced(Promise.resolve(7), controller.signal), 7);
    await assert.rejects(raced(Promise.reject(new Error('no')), controller.signal), /no/);
  });
});
