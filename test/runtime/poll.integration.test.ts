/**
 * The polling hint (T-27): adaptive per tool, bounded, growing with a task's
 * age; and the optional pacing of clients that poll too fast.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { createRuntime, silentLogger } from '../../src/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { PollPolicy } from '../../src/runtime/PollPolicy.js';
import { PollRateLimiter } from '../../src/runtime/PollRateLimiter.js';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';
import { connect, envelope } from '../support/extTasksClient.js';

const record = (overrides: Partial<TaskRecord>): TaskRecord => ({
  taskId: 't',
  owner: 'o',
  tool: 'slow',
  status: 'working',
  createdAt: 0,
  lastUpdatedAt: 0,
  ttlMs: null,
  pollIntervalMs: 1000,
  version: 1,
  machineVersion: 1,
  ...overrides,
});

describe('PollPolicy', () => {
  it('uses the default until a tool has history, then a quarter of its typical duration, within bounds', () => {
    const policy = new PollPolicy({ defaultMs: 1000, minMs: 100, maxMs: 30_000 });
    assert.equal(policy.initial('slow', undefined), 1000);
    for (let i = 0; i < 3; i++) policy.observe(record({ status: 'completed', lastUpdatedAt: 8000 }));
    assert.equal(policy.initial('slow', undefined), 2000);
    assert.equal(policy.initial('other', undefined), 1000, 'history is per tool');
    for (let i = 0; i < 50; i++) policy.observe(record({ tool: 'fast', status: 'completed', lastUpdatedAt: 10 }));
    assert.equal(policy.initial('fast', undefined), 100, 'never below minMs');
    for (let i = 0; i < 50; i++) policy.observe(record({ tool: 'huge', status: 'failed', lastUpdatedAt: 10_000_000 }));
    assert.equal(policy.initial('huge', undefined), 30_000, 'never above maxMs');
  });

  it("a tool's own pollIntervalMs always wins; cancelled runs teach nothing", () => {
    const policy = new PollPolicy({ defaultMs: 1000 });
    for (let i = 0; i < 5; i++) policy.observe(record({ status: 'cancelled', lastUpdatedAt: 60_000 }));
    assert.equal(policy.initial('slow', undefined), 1000);
    assert.equal(policy.initial('slow', 250), 250);
  });

  it('grows with the age of an unfinished task, bounded, and is left alone once finished', () => {
    const policy = new PollPolicy({ defaultMs: 1000, maxMs: 20_000 });
    assert.equal(policy.current(record({}), 5_000), 1000, 'young: its own hint');
    assert.equal(policy.current(record({}), 60_000), 6000, 'a minute old: age / 10');
    assert.equal(policy.current(record({}), 3_600_000), 20_000, 'an hour old: the bound');
    assert.equal(policy.current(record({ status: 'completed' }), 3_600_000), 1000);
    assert.equal(new PollPolicy({ defaultMs: 1000, growthDivisor: 0 }).current(record({}), 3_600_000), 1000);
  });
});

describe('PollRateLimiter', () => {
  it('delays a poll that comes earlier than factor × interval, per principal and task', async () => {
    let now = 0;
    const limiter = new PollRateLimiter({ factor: 0.5 }, () => now);
    const sleeps: number[] = [];
    assert.equal(await limiter.admit('a', 't', 1000), 0);
    now = 100;
    const started = Date.now();
    sleeps.push(await limiter.admit('a', 't', 100));
    assert.equal(sleeps[0], 0, '100 ms later with a 100 ms hint is fine');
    now = 110;
    const waited = await limiter.admit('a', 't', 100);
    assert.equal(waited, 40);
    assert.ok(Date.now() - started >= 35, 'the answer really waited');
    assert.equal(await limiter.admit('b', 't', 100), 0, 'another principal is not slowed');
    assert.equal(await limiter.admit('a', 'u', 100), 0, 'another task is not slowed');
  });

  it('forgets the oldest pairs past maxEntries', async () => {
    const limiter = new PollRateLimiter({ maxEntries: 2 }, () => 0);
    await limiter.admit('a', '1', 1000);
    await limiter.admit('a', '2', 1000);
    await limiter.admit('a', '3', 1000);
    assert.equal(await limiter.admit('a', '1', 1000), 0, 'pair 1 was forgotten, so it is a first poll again');
  });
});

describe('through the wire', () => {
  it('tasks/get shows a hint that grows with age, and with pollRateLimit a too-fast poll is answered late', async () => {
    const runtime = createRuntime({
      store: new MemoryTaskStore(),
      logger: silentLogger,
      pollIntervalMs: 50,
      poll: { growthDivisor: 2 },
      pollRateLimit: { factor: 1, maxDelayMs: 2000 },
    });
    runtime.tool('wait', { taskBehavior: 'always', inputSchema: z.object({}) }, async (_args, ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      throw ctx.signal.reason;
    });
    await runtime.start();
    const http = await listenHttp(runtime, { port: 0 });
    const client = await connect({ kind: 'http', url: http.url });
    try {
      const created = (await client.raw({ method: 'tools/call', params: { name: 'wait', arguments: {}, _meta: envelope() } } as never)) as {
        kind: 'result';
        result: { taskId: string; pollIntervalMs: number };
      };
      assert.equal(created.result.pollIntervalMs, 50);
      await new Promise((resolve) => setTimeout(resolve, 400));
      const get = () => client.raw({ method: 'tasks/get', params: { taskId: created.result.taskId, _meta: envelope() } } as never);
      const first = (await get()) as { kind: 'result'; result: { pollIntervalMs: number } };
      assert.ok(first.result.pollIntervalMs >= 150, `grown with age: ${first.result.pollIntervalMs}`);
      const started = Date.now();
      await get(); // at once: earlier than the hint asks, so it is paced
      assert.ok(Date.now() - started >= first.result.pollIntervalMs * 0.8, 'the second, too-early poll was answered late');
      await client.raw({ method: 'tasks/cancel', params: { taskId: created.result.taskId, _meta: envelope() } } as never);
    } finally {
      await client.close();
      await runtime.close();
    }
  });
});
