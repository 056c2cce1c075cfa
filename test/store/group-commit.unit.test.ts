/**
 * The kit's group commit (I-1, T-07): each caller is answered only after the
 * commit holding its write; a failed commit fails every write of its batch
 * and acknowledges none; batches are bounded and first in first out; a lone
 * write never waits for company; batches in flight are bounded.
 * The commit function is a controllable fake: each batch's commit is a
 * promise the test settles, so every step is waited on, never timed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { failed, GroupCommit, succeeded, type WriteOutcome } from '../../src/store/kit/GroupCommit.js';

interface PendingBatch {
  writes: readonly string[];
  settle(outcomes: readonly WriteOutcome<string>[]): void;
  fail(error: Error): void;
}

/** A GroupCommit over a commit the test drives: every batch waits in `batches` until settled. */
function drivenGroup(options: { maxBatch?: number; maxInFlight?: number } = {}) {
  const batches: PendingBatch[] = [];
  const waiters: Array<() => void> = [];
  const group = new GroupCommit<string, string>(
    (writes) =>
      new Promise<readonly WriteOutcome<string>[]>((resolve, reject) => {
        batches.push({ writes, settle: resolve, fail: reject });
        for (const wake of waiters.splice(0)) wake();
      }),
    (error, count) => new Error(`cannot commit ${count} write(s): ${(error as Error).message}`),
    options,
  );
  /** Resolves once `n` batches have been handed to the commit. */
  const batchesStarted = async (n: number): Promise<PendingBatch[]> => {
    while (batches.length < n) await new Promise<void>((resolve) => waiters.push(resolve));
    return batches.slice(0, n);
  };
  const ok = (batch: PendingBatch) => batch.settle(batch.writes.map((write) => succeeded(`stored ${write}`)));
  return { group, batches, batchesStarted, ok };
}

/** Whether `promise` has settled by the next turn of the event loop. */
async function stateOf(promise: Promise<unknown>): Promise<'pending' | 'resolved' | 'rejected'> {
  let state: 'pending' | 'resolved' | 'rejected' = 'pending';
  promise.then(
    () => (state = 'resolved'),
    () => (state = 'rejected'),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return state;
}

describe('GroupCommit', () => {
  it('writes handed in during one turn share one commit; each is answered only after it', async () => {
    const { group, batchesStarted, ok } = drivenGroup();
    const answers = ['a', 'b', 'c'].map((write) => group.add(write));
    const [batch] = await batchesStarted(1);
    assert.deepEqual(batch!.writes, ['a', 'b', 'c']);
    for (const answer of answers) assert.equal(await stateOf(answer), 'pending', 'answered before its commit');
    ok(batch!);
    assert.deepEqual(await Promise.all(answers), ['stored a', 'stored b', 'stored c']);
    assert.equal(group.commits, 1);
  });

  it('a failed commit fails every write of its batch with the described error and acknowledges none', async () => {
    const { group, batchesStarted, ok } = drivenGroup();
    const first = ['a', 'b', 'c'].map((write) => group.add(write));
    const [failing] = await batchesStarted(1);
    // Handed in while the failing batch commits: its own batch, untouched by the failure.
    const later = group.add('d');
    failing!.fail(new Error('disk full'));
    const outcomes = await Promise.allSettled(first);
    for (const outcome of outcomes) {
      assert.equal(outcome.status, 'rejected');
      assert.match(String(outcome.reason), /cannot commit 3 write\(s\): disk full/);
    }
    const [, next] = await batchesStarted(2);
    assert.deepEqual(next!.writes, ['d']);
    ok(next!);
    assert.equal(await later, 'stored d');
    assert.equal(group.commits, 1, 'the failed batch is not counted as committed');
  });

  it("one write's own refusal (a duplicate id) fails it alone", async () => {
    const { group, batchesStarted } = drivenGroup();
    const answers = ['a', 'dup', 'c'].map((write) => group.add(write));
    const [batch] = await batchesStarted(1);
    batch!.settle(batch!.writes.map((write) => (write === 'dup' ? failed(new Error('exists')) : succeeded(write))));
    const outcomes = await Promise.allSettled(answers);
    assert.deepEqual(
      outcomes.map((outcome) => outcome.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
  });

  it('batches hold at most maxBatch writes, first in first out: none is overtaken by a later one', async () => {
    const { group, batchesStarted, ok } = drivenGroup({ maxBatch: 2 });
    const answers = ['a', 'b', 'c', 'd', 'e'].map((write) => group.add(write));
    const [first] = await batchesStarted(1);
    assert.deepEqual(first!.writes, ['a', 'b']);
    // Handed in after c, d and e were queued: it goes after them.
    const late = group.add('f');
    ok(first!);
    const [, second] = await batchesStarted(2);
    assert.deepEqual(second!.writes, ['c', 'd']);
    ok(second!);
    const [, , third] = await batchesStarted(3);
    assert.deepEqual(third!.writes, ['e', 'f']);
    ok(third!);
    assert.deepEqual(
      await Promise.all([...answers, late]),
      ['a', 'b', 'c', 'd', 'e', 'f'].map((write) => `stored ${write}`),
    );
    await group.idle();
  });

  it('with one batch in flight (the default), batches commit one after the other, in order', async () => {
    const { group, batches, batchesStarted, ok } = drivenGroup();
    void group.add('a');
    const [first] = await batchesStarted(1);
    const second = group.add('b');
    // Let several turns pass: 'b' must not start committing while 'a' is.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(batches.length, 1);
    ok(first!);
    const [, next] = await batchesStarted(2);
    assert.deepEqual(next!.writes, ['b']);
    ok(next!);
    assert.equal(await second, 'stored b');
  });

  it('a lone write (c=1) commits on its own, without waiting for company, again and again', async () => {
    const { group, batchesStarted, ok } = drivenGroup();
    for (let i = 0; i < 5; i++) {
      const answer = group.add(`w${i}`);
      const started = await batchesStarted(i + 1);
      assert.deepEqual(started[i]!.writes, [`w${i}`]);
      ok(started[i]!);
      assert.equal(await answer, `stored w${i}`);
    }
    assert.equal(group.commits, 5);
  });

  it('maxInFlight: a write handed in while a batch commits starts its own batch, up to the bound; past it writes wait', async () => {
    const { group, batches, batchesStarted, ok } = drivenGroup({ maxInFlight: 2 });
    const a = group.add('a');
    await batchesStarted(1);
    const b = group.add('b');
    const [first, second] = await batchesStarted(2);
    assert.deepEqual(second!.writes, ['b']);
    // Both in flight: c and d wait together for a free slot.
    const c = group.add('c');
    const d = group.add('d');
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(batches.length, 2);
    // The later batch may finish first: each caller is answered by its own commit.
    ok(second!);
    assert.equal(await b, 'stored b');
    assert.equal(await stateOf(a), 'pending');
    const [, , third] = await batchesStarted(3);
    assert.deepEqual(third!.writes, ['c', 'd']);
    ok(first!);
    ok(third!);
    assert.deepEqual(await Promise.all([a, c, d]), ['stored a', 'stored c', 'stored d']);
  });

  it('idle() waits for every write handed in, batches in flight included', async () => {
    const { group, batchesStarted, ok } = drivenGroup({ maxBatch: 1, maxInFlight: 2 });
    const answers = ['a', 'b', 'c'].map((write) => group.add(write));
    let idle = false;
    const done = group.idle().then(() => (idle = true));
    const [first, second] = await batchesStarted(2);
    ok(first!);
    ok(second!);
    const [, , third] = await batchesStarted(3);
    assert.equal(idle, false);
    ok(third!);
    await done;
    await Promise.all(answers);
    assert.equal(await stateOf(group.idle()), 'resolved');
  });

  it('refuses bounds that are not positive integers', () => {
    const commit = () => [];
    const describe = () => new Error('x');
    assert.throws(() => new GroupCommit<string>(commit, describe, { maxBatch: 0 }), /maxBatch must be a positive integer/);
    assert.throws(() => new GroupCommit<string>(commit, describe, { maxInFlight: 1.5 }), /maxInFlight must be a positive integer/);
  });
});
