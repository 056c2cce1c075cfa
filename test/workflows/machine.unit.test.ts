/**
 * The workflow machine on its own (I-8): it walks the steps, compensates on
 * a hard failure, stops on CANCEL, and a persisted snapshot taken mid-step
 * survives a JSON round trip and re-runs the step in flight when restored.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor, fromPromise, toPromise } from 'xstate';
import { workflowMachine, type StepRunInput, type StepRunOutput } from '../../machines/workflow/index.js';

function provided(run: (input: StepRunInput, signal: AbortSignal) => Promise<StepRunOutput>) {
  return workflowMachine.provide({
    actors: { runStep: fromPromise<StepRunOutput, StepRunInput>(({ input, signal }) => run(input, signal)) },
  });
}

const input = { workflow: 'w', stepIds: ['a', 'b', 'c'], onFailureIds: ['undo'] };

describe('workflow machine', () => {
  it('runs steps in order, keeps results and outcomes, ends succeeded', async () => {
    const seen: string[] = [];
    const actor = createActor(
      provided(
        async (step) => (
          seen.push(step.stepId),
          step.stepId === 'b' ? { status: 'skipped' } : { status: 'completed', result: step.stepId.toUpperCase() }
        ),
      ),
      { input },
    );
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
    const actor = createActor(
      provided(async (step) => {
        seen.push(`${step.phase}:${step.stepId}`);
        if (step.stepId === 'a') return { status: 'failed', message: 'soft', allowFailure: true };
        if (step.stepId === 'b') return { status: 'failed', message: 'hard', code: -32050, allowFailure: false };
        return { status: 'completed', result: 1 };
      }),
      { input },
    );
    actor.start();
    await toPromise(actor);
    assert.equal(actor.getSnapshot().value, 'failed');
    assert.deepEqual(seen, ['main:a', 'main:b', 'onFailure:undo']);
    assert.deepEqual(actor.getSnapshot().context.failure, { stepId: 'b', message: 'hard', code: -32050 });
  });

  it('CANCEL stops the step in flight (its signal fires) and nothing else runs', async () => {
    const seen: string[] = [];
    let aborted = false;
    const actor = createActor(
      provided((step, signal) => {
        seen.push(step.stepId);
        return new Promise(() => signal.addEventListener('abort', () => (aborted = true)));
      }),
      { input },
    );
    actor.start();
    actor.send({ type: 'CANCEL' });
    assert.equal(actor.getSnapshot().value, 'cancelled');
    assert.equal(aborted, true);
    assert.deepEqual(seen, ['a']);
  });

  it('a snapshot persisted mid-step restores from JSON and runs that step again (at-least-once)', async () => {
    const first = createActor(
      provided(async (step) => (step.stepId === 'b' ? new Promise<never>(() => {}) : { status: 'completed', result: step.index })),
      { input },
    );
    first.start();
    await new Promise((resolve) => setTimeout(resolve, 0));
    const persisted = JSON.parse(JSON.stringify(first.getPersistedSnapshot())) as unknown;
    first.stop();
    const seen: string[] = [];
    const second = createActor(
      provided(async (step) => (seen.push(step.stepId), { status: 'completed', result: step.index })),
      {
        snapshot: persisted as never,
        input, // ignored on restore, but xstate's options type requires it (statelyai/xstate#4915)
      },
    );
    second.start();
    await toPromise(second);
    assert.equal(second.getSnapshot().value, 'succeeded');
    assert.deepEqual(seen, ['b', 'c']);
    assert.deepEqual(second.getSnapshot().context.results, { a: 0, b: 1, c: 2 });
  });
});
