/**
 * Parts of the workflow engine on their own: the retry policy's rules and
 * the expansion `forEach` and `parallel` share. The scenarios test them
 * through whole runs; these pin the rules a run cannot easily show.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runParallel, type RunSubStep } from '../../src/workflows/engine/expansion.js';
import type { StepCall } from '../../src/workflows/engine/RunEnv.js';
import { retries, retryDelay } from '../../src/workflows/engine/retryPolicy.js';
import type { WorkflowSubStep } from '../../src/workflows/index.js';

const failed = (kind?: 'error' | 'isError' | 'timeout' | 'invalid') => ({
  status: 'failed' as const,
  message: 'no',
  ...(kind ? { kind } : {}),
});
const live = new AbortController().signal;

describe('retry policy', () => {
  it('waits initialDelay × multiplier^(attempt-1), at most maxDelay; 1 s doubling up to 60 s by default', () => {
    assert.deepEqual(
      [1, 2, 3, 7, 8].map((attempt) => retryDelay({ attempts: 9 }, attempt)),
      [1000, 2000, 4000, 60_000, 60_000],
    );
    const retry = { attempts: 5, initialDelay: '100ms', multiplier: 3, maxDelay: '1s' };
    assert.deepEqual(
      [1, 2, 3].map((attempt) => retryDelay(retry, attempt)),
      [100, 300, 900],
    );
    assert.equal(retryDelay(retry, 4), 1000);
  });

  it('retries errors and timeouts by default, never past its attempts, never bad input, never after a cancel', () => {
    const retry = { attempts: 3 };
    assert.equal(retries(retry, failed(), 1, live), true);
    assert.equal(retries(retry, failed('timeout'), 2, live), true);
    assert.equal(retries(retry, failed('error'), 3, live), false);
    assert.equal(retries(retry, failed('isError'), 1, live), false);
    assert.equal(retries(retry, failed('invalid'), 1, live), false);
    assert.equal(retries({ attempts: 3, on: ['isError'] }, failed('isError'), 1, live), true);
    assert.equal(retries({ attempts: 3, on: ['isError'] }, failed('error'), 1, live), false);
    assert.equal(retries(undefined, failed(), 1, live), false);
    assert.equal(retries(retry, failed(), 1, AbortSignal.abort()), false);
  });
});

describe('parallel expansion', () => {
  const subs: WorkflowSubStep[] = ['a', 'b', 'c'].map((id) => ({ id, tool: 'x' }));
  const call = (signal = live): StepCall => ({
    step: { id: 'p', parallel: subs },
    phase: 'main',
    scope: { input: {}, results: { before: 1 }, vars: {} },
    outcomes: {},
    recordId: 'p',
    keyPrefix: '',
    signal,
  });

  it('runs every sub-step, each seeing only what came before; the failure named is the first in step order', async () => {
    const seen: string[] = [];
    let releaseB!: () => void;
    const bMayFail = new Promise<void>((resolve) => (releaseB = resolve));
    const runSub: RunSubStep = async (sub, scope, _outcomes, recordId) => {
      seen.push(`${recordId}:${Object.keys(scope.results).join(',')}`);
      if (sub.id === 'b') {
        await bMayFail; // b fails only after c has failed: time order and step order differ
        return { status: 'failed', message: 'b broke', code: -1 };
      }
      if (sub.id === 'c') {
        releaseB();
        return { status: 'failed', message: 'c broke' };
      }
      return { status: 'completed', result: sub.id.toUpperCase() };
    };
    const outcome = await runParallel(call(), subs, undefined, runSub);
    assert.deepEqual(seen, ['p.a:before', 'p.b:before', 'p.c:before']);
    assert.deepEqual(outcome, {
      status: 'failed',
      message: 'p.b: b broke',
      code: -1,
      result: {
        a: 'A',
        b: { error: 'b broke', success: false, isError: true },
        c: { error: 'c broke', success: false, isError: true },
      },
    });
  });

  it('keeps maxConcurrency: never more sub-steps in flight than it allows', async () => {
    let running = 0;
    let most = 0;
    const runSub: RunSubStep = async (sub) => {
      most = Math.max(most, ++running);
      await Promise.resolve();
      running--;
      return { status: 'completed', result: sub.id };
    };
    const outcome = await runParallel(call(), subs, 2, runSub);
    assert.deepEqual(outcome, { status: 'completed', result: { a: 'a', b: 'b', c: 'c' } });
    assert.equal(most, 2);
  });
});
