/** limits/TokenBucket.ts and RateLimiter.ts on an injected clock: no timing, every instant chosen by the test. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RateLimiter } from '../../src/limits/RateLimiter.js';
import { TokenBucket } from '../../src/limits/TokenBucket.js';
import { ErrorCode, RateLimitedError } from '../../src/core/errors.js';

/** A clock the test moves. */
const clock = () => {
  let now = 1_000_000;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
};

describe('TokenBucket', () => {
  it('holds burst tokens, refills limit per window, and says how long until the next one', () => {
    const bucket = new TokenBucket({ limit: 10, windowMs: 1000, burst: 3 }, 0);
    assert.deepEqual([bucket.take(0), bucket.take(0), bucket.take(0)], [0, 0, 0]);
    assert.equal(bucket.take(0), 100, 'one token every 100 ms');
    assert.equal(bucket.take(40), 60, 'a refused take takes nothing');
    assert.equal(bucket.take(100), 0);
    assert.equal(bucket.take(10_000), 0);
    assert.equal(bucket.isFull(10_000), false);
    assert.equal(bucket.isFull(10_100), true, 'never more than burst');
  });

  it('a share scales both rate and burst (at least one token)', () => {
    const half = new TokenBucket({ limit: 10, windowMs: 1000 }, 0, 0.5);
    assert.equal(half.capacity, 5);
    for (let i = 0; i < 5; i++) assert.equal(half.take(0), 0);
    assert.equal(half.take(0), 200);
    assert.equal(new TokenBucket({ limit: 1, windowMs: 1000 }, 0, 0.25).capacity, 1);
  });

  it('a clock going back adds nothing', () => {
    const bucket = new TokenBucket({ limit: 1, windowMs: 1000 }, 5000);
    assert.equal(bucket.take(5000), 0);
    assert.ok(bucket.take(4000) > 0);
  });
});

describe('RateLimiter', () => {
  it('requests per principal: one principal over its limit never blocks another', () => {
    const time = clock();
    const limiter = new RateLimiter({ requests: { limit: 2, windowMs: 60_000 } }, time.now);
    assert.equal(limiter.charge('alice'), undefined);
    assert.equal(limiter.charge('alice'), undefined);
    const refused = limiter.charge('alice');
    assert.ok(refused instanceof RateLimitedError);
    assert.equal(refused.code, ErrorCode.RateLimited);
    assert.deepEqual(refused.data, { limit: 'requests', retryAfterMs: 30_000, retryable: true });
    assert.equal(limiter.charge('bob'), undefined);
    time.advance(30_000);
    assert.equal(limiter.charge('alice'), undefined);
  });

  it('task creations count only calls that may create a task; tool rules one bucket per rule', () => {
    const time = clock();
    const limiter = new RateLimiter(
      { taskCreations: { limit: 1, windowMs: 1000 }, tools: [{ tools: ['github_*'], limit: 1, windowMs: 10_000 }] },
      time.now,
    );
    assert.equal(limiter.charge('a', { tool: 'echo', mayCreateTask: true }), undefined);
    assert.equal(limiter.charge('a', { tool: 'echo', mayCreateTask: false }), undefined, 'not a creation');
    assert.equal(limiter.charge('a', { tool: 'echo', mayCreateTask: true })?.data.limit, 'taskCreations');
    assert.equal(limiter.charge('a', { tool: 'github_list' }), undefined);
    const refused = limiter.charge('a', { tool: 'github_create' });
    assert.equal(refused?.data.limit, 'toolCalls', 'the rule is shared by every tool it matches');
    assert.equal(refused?.data.retryAfterMs, 10_000);
  });

  it('a tool name longer than any tool name is matched against no tool rule (it names no tool)', () => {
    const limiter = new RateLimiter({ tools: [{ tools: ['*'], limit: 1, windowMs: 1000 }] }, clock().now);
    const long = 'x'.repeat(2000);
    assert.equal(limiter.charge('a', { tool: long }), undefined);
    assert.equal(limiter.charge('a', { tool: long }), undefined);
    assert.equal(limiter.charge('a', { tool: 'x' }), undefined);
    assert.equal(limiter.charge('a', { tool: 'x' })?.data.limit, 'toolCalls');
  });

  it('a refusal takes nothing from the other buckets', () => {
    const time = clock();
    const limiter = new RateLimiter(
      { requests: { limit: 2, windowMs: 1000 }, tools: [{ tools: ['slow'], limit: 1, windowMs: 1000 }] },
      time.now,
    );
    assert.equal(limiter.charge('a', { tool: 'slow' }), undefined);
    assert.equal(limiter.charge('a', { tool: 'slow' })?.data.limit, 'toolCalls');
    assert.equal(limiter.charge('a', { tool: 'other' }), undefined, 'the refused call did not spend a request token');
    assert.equal(limiter.charge('a')?.data.limit, 'requests');
  });

  it('setShare divides each rate among instances', () => {
    const time = clock();
    const limiter = new RateLimiter({ requests: { limit: 10, windowMs: 1000 } }, time.now);
    limiter.setShare(1 / 2);
    let admitted = 0;
    for (let i = 0; i < 20; i++) if (limiter.charge('a') === undefined) admitted++;
    assert.equal(admitted, 5);
  });

  it('memory is bounded: past maxTrackedPrincipals full buckets are forgotten first', () => {
    const time = clock();
    const limiter = new RateLimiter({ requests: { limit: 1, windowMs: 1000 }, maxTrackedPrincipals: 3 }, time.now);
    for (const id of ['a', 'b', 'c']) assert.equal(limiter.charge(id), undefined);
    assert.ok(limiter.charge('a'), 'a is empty');
    time.advance(1000);
    // Every bucket is full again: adding d forgets them all, and a starts over full.
    assert.equal(limiter.charge('d'), undefined);
    assert.equal(limiter.charge('a'), undefined);
  });
});
