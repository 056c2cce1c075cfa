/**
 * Stopping task actors never throws out of an abort: when this instance
 * loses its lease (ClusterNode calls `relinquishAll()`) or the runtime
 * closes, every task is dropped whatever it waits for — its handler on
 * `ctx.signal`, a `ctx.sleep`, a `ctx.elicit`, a checkpoint write, a
 * workflow step (tool, input, retry backoff, parallel, DAG) or the
 * workflow's own step-start checkpoint — and the process sees no uncaught
 * exception and no unhandled rejection (either kills a Node server).
 *
 * Each case runs with the store writing, refusing writes (a write waits for
 * its retry) and holding a write in flight: a stop while a write is
 * pending is what lets a workflow step go on after its signal fired (I-9:
 * the persister stops, its waiters are released).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import type { JsonObject } from '../../src/core/json.js';
import { createRuntime, defineTool, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';
import { parseWorkflow, ToolInvoker, workflowTool } from '../../src/workflows/index.js';

type Writes = 'writing' | 'refusing' | 'holding';
type Stop = 'lease lost' | 'close';

const CAPABILITIES = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };

/** Process-level failures seen while a case runs (the test's own listeners: Node's default would kill the runner). */
const escaped: unknown[] = [];
const record = (error: unknown) => escaped.push(error);

/** A memory store whose writes (`put`) can be refused or held in flight. */
class ControlledStore extends MemoryTaskStore {
  writes: Writes = 'writing';
  private release: (() => void) | undefined;
  private held: Promise<void> | undefined;

  override async put(task: TaskRecord): Promise<void> {
    if (this.writes === 'refusing') throw new Error('the disk is full');
    if (this.writes === 'holding') {
      this.held ??= new Promise((resolve) => (this.release = resolve));
      await this.held;
    }
    return super.put(task);
  }

  /** Lets held writes land, and every later one. */
  writeAgain(): void {
    this.writes = 'writing';
    this.release?.();
  }
}

/** What the tasks did, and a way to wait for it (no timers: each entry is an event). */
class Sightings {
  private readonly seen = new Set<string>();
  private readonly waiters: Array<{ key: string; resolve: () => void }> = [];

  note(key: string): void {
    this.seen.add(key);
    for (const waiter of this.waiters.filter((w) => w.key === key)) waiter.resolve();
  }

  has(key: string): boolean {
    return this.seen.has(key);
  }

  when(key: string): Promise<void> {
    if (this.seen.has(key)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ key, resolve }));
  }
}

const tagged = z.object({ tag: z.string() });

function tools(seen: Sightings) {
  const untilAborted = (signal: AbortSignal) =>
    new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }));
  return [
    defineTool('on_signal', { inputSchema: tagged, taskBehavior: 'always' }, async ({ tag }, ctx) => {
      const aborted = untilAborted(ctx.signal);
      seen.note(tag);
      return aborted;
    }),
    defineTool('on_sleep', { inputSchema: tagged, taskBehavior: 'always' }, async ({ tag }, ctx) => {
      const slept = ctx.sleep('nap', 600_000);
      seen.note(tag);
      await slept;
      return 'woke';
    }),
    defineTool('on_elicit', { inputSchema: tagged, taskBehavior: 'always' }, async ({ tag }, ctx) => {
      const answer = ctx.elicit('name', { message: 'Name?', requestedSchema: { type: 'object', properties: {} } });
      seen.note(tag);
      await answer;
      return 'answered';
    }),
    defineTool('on_checkpoint', { inputSchema: tagged, taskBehavior: 'always', resume: 'resume' }, async ({ tag }, ctx) => {
      const saved = ctx.saveCheckpoint({ at: 1 });
      seen.note(tag);
      await saved;
      return untilAborted(ctx.signal);
    }),
    // A workflow step's tool: waits on its signal; fails on its first attempt when asked to (retry shapes).
    defineTool(
      'step',
      { inputSchema: z.object({ tag: z.string(), failFirst: z.boolean().optional() }) },
      async ({ tag, failFirst }, ctx) => {
        if (failFirst && !seen.has(`${tag}:failed`)) {
          seen.note(`${tag}:failed`);
          throw new Error('first attempt fails');
        }
        const aborted = untilAborted(ctx.signal);
        seen.note(tag);
        return aborted;
      },
    ),
  ];
}

/** The workflows, each waiting in a different place once started. */
const WORKFLOWS: Record<string, string> = {
  flow_tool: 'taskBehavior: always\nsteps:\n  - { id: a, tool: step, args: { tag: flow_tool } }\n',
  flow_input:
    'taskBehavior: always\nsteps:\n  - id: a\n    input: { message: "Name?", requestedSchema: { type: object, properties: { name: { type: string } } } }\n',
  flow_retry:
    'taskBehavior: always\nsteps:\n  - id: a\n    tool: step\n    args: { tag: flow_retry, failFirst: true }\n    retry: { attempts: 3, initialDelay: 10m }\n',
  flow_parallel:
    'taskBehavior: always\nsteps:\n  - id: a\n    parallel:\n      - { id: x, tool: step, args: { tag: flow_parallel } }\n      - { id: y, tool: step, args: { tag: flow_parallel_y } }\n',
  flow_dag:
    'taskBehavior: always\nsteps:\n  - { id: a, tool: step, args: { tag: flow_dag }, needs: [] }\n  - { id: b, tool: step, args: { tag: flow_dag_b }, needs: [a] }\n',
};

/** Where each workflow waits with the store writing: in its step's tool, its input request, its retry backoff. */
const WAITING_WHEN_WRITING: Record<string, string> = {
  flow_tool: 'flow_tool',
  flow_input: 'input:flow_input',
  flow_retry: 'sleep:flow_retry',
  flow_parallel: 'flow_parallel',
  flow_dag: 'flow_dag',
};

async function startRuntime(store: ControlledStore, seen: Sightings): Promise<TaskvisorRuntime> {
  const runtime = createRuntime({
    store,
    logger: silentLogger,
    reapIntervalMs: 0,
    passivateIdleAfterMs: false,
    // The task actors' events tell where a workflow waits: its first checkpoint write, its input request, its backoff.
    inspect: (event: InspectionEvent) => {
      if (event.type !== '@xstate.event') return;
      const context = (event.actorRef.getSnapshot() as { context?: { tool?: string } }).context;
      const tool = context?.tool;
      if (!tool?.startsWith('workflow_')) return;
      const name = tool.slice('workflow_'.length);
      const sent = event.event as { type: string };
      if (sent.type === 'CHECKPOINT') seen.note(`checkpoint:${name}`);
      if (sent.type === 'INPUT_NEEDED') seen.note(`input:${name}`);
      if (sent.type === 'SLEEP') seen.note(`sleep:${name}`);
    },
  });
  runtime.use(...tools(seen));
  const invoker = new ToolInvoker(runtime.tools);
  for (const [name, text] of Object.entries(WORKFLOWS)) {
    const tool = workflowTool(parseWorkflow(text, `${name}.yaml`), 'workflow_', invoker);
    runtime.tools.add(tool.name, tool.options, tool.handler);
  }
  await runtime.start();
  return runtime;
}

async function create(runtime: TaskvisorRuntime, name: string, args: JsonObject): Promise<string> {
  const created = await runtime.toolCalls.answer({ name, args, principal: 'alice', era: 'modern', clientCapabilities: CAPABILITIES });
  assert.equal(typeof created.taskId, 'string', JSON.stringify(created));
  return created.taskId as string;
}

/** Lets every reaction to the stop run (microtasks, then a turn of the event loop for what they scheduled). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

async function stopWhileWaiting(writes: Writes, stop: Stop): Promise<void> {
  const store = new ControlledStore();
  const seen = new Sightings();
  const runtime = await startRuntime(store, seen);
  store.writes = writes;
  const waits: Array<Promise<void>> = [];
  for (const tool of ['on_signal', 'on_sleep', 'on_elicit', 'on_checkpoint']) {
    await create(runtime, tool, { tag: tool });
    waits.push(seen.when(tool));
  }
  for (const name of Object.keys(WORKFLOWS)) {
    await create(runtime, `workflow_${name}`, {});
    // With writes pending, a workflow waits for its first checkpoint to be stored (its next step goes on once the stop releases it).
    waits.push(seen.when(writes === 'writing' ? WAITING_WHEN_WRITING[name]! : `checkpoint:${name}`));
  }
  await Promise.all(waits);
  await settle();
  assert.equal(runtime.liveTasks, 4 + Object.keys(WORKFLOWS).length);
  if (stop === 'lease lost') {
    // What ClusterNode does when its lease renewal failed.
    (runtime as unknown as { parts: { supervisor: { relinquishAll(): void } } }).parts.supervisor.relinquishAll();
    assert.equal(runtime.liveTasks, 0, 'every task is dropped here');
    store.writeAgain();
    await settle();
    await settle();
    await runtime.close();
  } else {
    const closed = runtime.close();
    // A held write must land for close to go on (it waits for the writes in flight, never for a retry).
    if (writes === 'holding') store.writeAgain();
    await closed;
    assert.equal(runtime.liveTasks, 0);
  }
  await settle();
  await settle();
}

describe('tasks stopped while they wait leave no uncaught error', () => {
  before(() => {
    process.on('uncaughtException', record);
    process.on('unhandledRejection', record);
  });
  after(() => {
    process.off('uncaughtException', record);
    process.off('unhandledRejection', record);
  });
  for (const stop of ['lease lost', 'close'] as const) {
    for (const writes of ['writing', 'refusing', 'holding'] as const) {
      it(`${stop}, the store ${writes}`, async () => {
        escaped.length = 0;
        await stopWhileWaiting(writes, stop);
        assert.deepEqual(
          escaped.map((error) => String((error as Error)?.stack ?? error)),
          [],
          'no uncaught exception, no unhandled rejection',
        );
      });
    }
  }
});
