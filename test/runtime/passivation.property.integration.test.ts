/**
 * Passivation is invisible (ARCHITECTURE "Passivation"): a
 * differential property. The same random sequence of get / update / cancel /
 * idle operations runs against two supervisors on real SQLite files, one
 * passivating tasks the moment they only wait for input (0 ms), one never;
 * with the same clock, every answer, every error and every published change
 * (what listen streams are made of) must be the same.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { z } from 'zod';
import { silentLogger, type TaskRecord } from '../../src/index.js';
import { TaskSupervisor } from '../../src/runtime/TaskSupervisor.js';
import { SqliteTaskStore } from '../../src/store/index.js';
import { defineTool } from '../../src/tools/defineTool.js';
import { ToolRegistry } from '../../src/tools/ToolRegistry.js';
import { delay, tempDir } from '../support/processes.js';

const KEYS = ['k1', 'k2', 'k3'] as const;
const ask = { message: 'value?', requestedSchema: { type: 'object' as const, properties: { v: { type: 'string' } } } };

/** Asks k1, k2, k3 in turn (k2 and k3 together), saying so in its status; answers what it got. */
const chain = defineTool('chain', { taskBehavior: 'always', resume: 'replay', inputSchema: z.object({}) }, async (_args, ctx) => {
  ctx.setStatus('asking k1');
  const first = await ctx.elicit('k1', ask);
  ctx.setStatus(`got k1, asking k2 and k3`);
  const [second, third] = await Promise.all([ctx.elicit('k2', ask), ctx.elicit('k3', ask)]);
  return JSON.stringify([first, second, third]);
});

type Op =
  { kind: 'get' } | { kind: 'idle' } | { kind: 'cancel' } | { kind: 'update'; responses: Record<string, unknown> } | { kind: 'foreign' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.constant<Op>({ kind: 'get' }),
  fc.constant<Op>({ kind: 'idle' }),
  { weight: 1, arbitrary: fc.constant<Op>({ kind: 'cancel' }) },
  fc.constant<Op>({ kind: 'foreign' }),
  {
    weight: 5,
    arbitrary: fc.subarray([...KEYS, 'unknown'], { minLength: 1 }).chain((keys) =>
      fc.tuple(...keys.map(() => fc.constantFrom('a', 'b'))).map((values) => ({
        kind: 'update' as const,
        responses: Object.fromEntries(keys.map((key, index) => [key, { action: 'accept', content: { v: values[index] } }])),
      })),
    ),
  },
);

/** Everything a client can observe of a record, minus its id (the two runs' ids differ). */
function observable(record: TaskRecord): unknown {
  const { taskId: _id, version: _version, ...rest } = record;
  return JSON.parse(JSON.stringify(rest)) as unknown;
}

async function settle(supervisor: TaskSupervisor, changes: unknown[]): Promise<void> {
  // Until nothing changes any more: writes stored, handlers waiting, idle timers (0 ms) run.
  for (let seen = -1, rounds = 0; rounds < 3 || seen !== changes.length; rounds++) {
    seen = changes.length;
    await supervisor.flushed();
    await delay(15);
  }
}

async function run(dir: string, passivateIdleAfterMs: number | false, ops: readonly Op[]) {
  const store = new SqliteTaskStore({ file: join(dir, `tasks-${passivateIdleAfterMs}.db`) });
  await store.open();
  const tools = new ToolRegistry();
  tools.add(chain.name, chain.options, chain.handler);
  let clock = 1_000_000;
  const supervisor = new TaskSupervisor({ store, tools, logger: silentLogger, reapIntervalMs: 0, now: () => clock, passivateIdleAfterMs });
  const changes: unknown[] = [];
  supervisor.onChange((record) => changes.push(observable(record)));
  const answers: unknown[] = [];
  try {
    await supervisor.start();
    const { taskId } = await supervisor.create({ tool: tools.get('chain')!, args: {}, principal: 'alice', ttlMs: null });
    await settle(supervisor, changes);
    for (const op of ops) {
      clock += 1000;
      const outcome = await (async () => {
        switch (op.kind) {
          case 'get':
            return observable(await supervisor.get(taskId, 'alice'));
          case 'idle':
            return delay(30).then(() => 'idle');
          case 'cancel':
            return supervisor.cancel(taskId, 'alice').then(() => 'cancelled');
          case 'update':
            return supervisor.update(taskId, 'alice', op.responses).then(() => 'updated');
          case 'foreign':
            return supervisor.get(taskId, 'mallory').then(observable);
        }
      })().catch((error: unknown) => ({ error: (error as Error).message }));
      await settle(supervisor, changes);
      answers.push(outcome, observable(await supervisor.get(taskId, 'alice')));
    }
    return { answers, changes, live: supervisor.liveCount };
  } finally {
    await supervisor.stop();
    await store.close();
  }
}

describe('passivation is invisible (differential)', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  before(async () => {
    dir = await tempDir('taskvisor-passivation-property-');
  });
  after(async () => {
    await dir.remove();
  });

  it('the same operations give the same answers and the same published changes with passivation on and off', async () => {
    let runIndex = 0;
    let passivatedSomewhere = false;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 7 }), async (ops) => {
        const path = join(dir.path, String(runIndex++));
        const passivated = await run(path, 0, ops);
        const live = await run(path, false, ops);
        assert.deepEqual(passivated.answers, live.answers);
        assert.deepEqual(passivated.changes, live.changes);
        // With passivation on, a task waiting for input has no actor after settling.
        if (passivated.live === 0 && live.live === 1) passivatedSomewhere = true;
      }),
      // Each run settles a real SQLite store after every operation: a few dozen sequences are seconds, not minutes.
      { numRuns: 25 },
    );
    assert.ok(passivatedSomewhere, 'some run ended with the task passivated (the property compared something)');
  });
});
