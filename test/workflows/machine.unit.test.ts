/**
 * The workflow machine on its own (I-8): it walks the steps with the step
 * executor its input gives it, compensates on a hard failure, stops on
 * CANCEL, and a persisted snapshot taken mid-step is plain JSON and re-runs
 * the step in flight when restored — a snapshot stored by the machine before
 * the executor came in as input included.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor, toPromise } from 'xstate';
import {
  persistWorkflowSnapshot,
  restorableWorkflowSnapshot,
  WORKFLOW_MACHINE_VERSION,
  workflowMachine,
  type ExecuteStep,
} from '../../machines/workflow/index.js';

const steps = { workflow: 'w', stepIds: ['a', 'b', 'c'], onFailureIds: ['undo'] };
/** The paths of every function or `executeStep` key inside `value`. */
function functionsIn(value: unknown, path = '$'): string[] {
  if (typeof value === 'function') return [path];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) =>
    key === 'executeStep' ? [`${path}.${key}`] : functionsIn(inner, `${path}.${key}`),
  );
}

const withExecutor = (executeStep: ExecuteStep) => ({ ...steps, executeStep });

/**
 * A snapshot stored by version 1 of the machine while step b was in flight
 * (written when the step executor was still provided with `.provide()`):
 * stored checkpoints of that shape must keep restoring.
 */
const STORED_V1_SNAPSHOT = {
  status: 'active',
  value: 'running',
  historyValue: {},
  context: {
    workflow: 'w',
    taskId: 't1',
    stepIds: ['a', 'b', 'c'],
    onFailureIds: ['undo'],
    phase: 'main',
    cursor: 1,
    results: { a: { n: 0 } },
    outcomes: { a: 'completed' },
  },
  children: {
    step: {
      snapshot: {
        status: 'active',
        input: { phase: 'main', index: 1, stepId: 'b', results: { a: { n: 0 } }, outcomes: { a: 'completed' } },
      },
      src: 'runStep',
      syncSnapshot: false,
    },
  },
};

describe('workflow machine', () => {
  it('runs steps in order, keeps results and outcomes, ends succeeded', async () => {
    const seen: string[] = [];
    const actor = createActor(workflowMachine, {
      input: withExecutor(
        async (step) => (
          seen.push(step.stepId),
          step.stepId === 'b' ? { status: 'skipped' } : { status: 'completed', result: step.stepId.toUpperCase() }
        ),
      ),
    });
    actor.start();
    await toPromise(actor);
    const snapshot = actor.getSnapshot();
    assert.equal(snapshot.value, 'succeeded');
    assert.deepEqual(seen, ['a', 'b', 'c']);
    assert.deepEqual(snapshot.context.results, { a: 'A', b: null, c: 'C' });
    assert.deepEqual(snapshot.context.outcomes, { a: 'completed', b: 'skipped', c: 'completed' });
  });

  it('a hard failure runs onFailure, then fails; an allowed failure goes on', async () => {
    const seen: string[] = [];
    const actor = createActor(workflowMachine, {
      input: withExecutor(async (step) => {
        seen.push(`${step.phase}:${step.stepId}`);
        if (step.stepId === 'a') return { status: 'failed', message: 'soft', allowFailure: true };
        if (step.stepId === 'b') return { status: 'failed', message: 'hard', code: -32050, allowFailure: false };
        return { status: 'completed', result: 1 };
      }),
    });
    actor.start();
    await toPromise(actor);
    assert.equal(actor.getSnapshot().value, 'failed');
    assert.deepEqual(seen, ['main:a', 'main:b', 'onFailure:undo']);
    assert.deepEqual(actor.getSnapshot().context.failure, { stepId: 'b', message: 'hard', code: -32050 });
  });

  it('CANCEL stops the step in flight (its signal fires) and nothing else runs', async () => {
    const seen: string[] = [];
    let aborted = false;
    const actor = createActor(workflowMachine, {
      input: withExecutor((step, signal) => {
        seen.push(step.stepId);
        return new Promise(() => signal.addEventListener('abort', () => (aborted = true)));
      }),
    });
    actor.start();
    actor.send({ type: 'CANCEL' });
    assert.equal(actor.getSnapshot().value, 'cancelled');
    assert.equal(aborted, true);
    assert.deepEqual(seen, ['a']);
  });

  it('a snapshot persisted mid-step is plain JSON, restores and runs that step again (at-least-once)', async () => {
    const first = createActor(workflowMachine, {
      input: withExecutor(async (step) =>
        step.stepId === 'b' ? new Promise<never>(() => {}) : { status: 'completed', result: step.index },
      ),
    });
    first.start();
    await new Promise((resolve) => setTimeout(resolve, 0));
    const persisted = persistWorkflowSnapshot(first);
    first.stop();
    // The executor is a dependency, not state: no function and no executeStep key is left to store.
    assert.deepEqual(functionsIn(persisted), []);
    const seen: string[] = [];
    const execute: ExecuteStep = async (step) => (seen.push(step.stepId), { status: 'completed', result: step.index });
    const second = createActor(workflowMachine, {
      snapshot: restorableWorkflowSnapshot(JSON.parse(JSON.stringify(persisted)), execute),
      input: withExecutor(execute), // ignored on restore, but xstate's options type requires it (statelyai/xstate#4915)
    });
    second.start();
    await toPromise(second);
    assert.equal(second.getSnapshot().value, 'succeeded');
    assert.deepEqual(seen, ['b', 'c']);
    assert.deepEqual(second.getSnapshot().context.results, { a: 0, b: 1, c: 2 });
  });

  it('a snapshot stored by version 1 of the machine restores with the same version and runs its step in flight again', async () => {
    // The stored shape did not change when the executor moved into the input, so the version stays.
    assert.equal(WORKFLOW_MACHINE_VERSION, 1);
    const seen: Array<{ stepId: string; results: unknown }> = [];
    const execute: ExecuteStep = async (step) => (
      seen.push({ stepId: step.stepId, results: step.results }),
      { status: 'completed', result: { n: step.index } }
    );
    const restored = createActor(workflowMachine, {
      snapshot: restorableWorkflowSnapshot(STORED_V1_SNAPSHOT, execute),
      input: withExecutor(execute),
    });
    restored.start();
    await toPromise(restored);
    const snapshot = restored.getSnapshot();
    assert.equal(snapshot.value, 'succeeded');
    assert.deepEqual(seen, [
      { stepId: 'b', results: { a: { n: 0 } } },
      { stepId: 'c', results: { a: { n: 0 }, b: { n: 1 } } },
    ]);
    assert.equal(snapshot.context.taskId, 't1');
    assert.deepEqual(snapshot.context.results, { a: { n: 0 }, b: { n: 1 }, c: { n: 2 } });
  });
});
