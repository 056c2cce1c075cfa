/**
 * Scale-out: real `taskvisor serve` processes on one PostgreSQL
 * schema, driven by the ext-tasks client over real HTTP. A task created on A
 * is visible, updatable, cancellable and listenable on B; the tasks of a
 * SIGKILLed owner are adopted by survivors (replayed, or failed with a
 * statusMessage) and none is run by two survivors; a killed database
 * connection is survived.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { freshSchema, pgQuery } from '../support/postgres.js';
import { createTask, getTask, isTerminalTask, pollTask, rawRequest, resultOf, tempDir, updateTask, waitFor } from '../support/processes.js';
import { envelope } from '../support/extTasksClient.js';
import { runStarts, startInstance, stopAll, writeClusterConfig, type Instance } from './cluster.js';

type Json = Record<string, unknown>;

/** Short, so adoption is quick; long enough that a survivor busy at load 20 keeps its own lease (1.5 s did not: B replayed twice). */
const LEASE_MS = 3_000;
/** The blip test checks that no lease is lost: a lease that outlasts scheduling delays on a loaded 2-core machine. */
const BLIP_LEASE_MS = 6_000;
/** Adoption needs the lease to lapse plus one beat; generous for a loaded 2-core machine. */
const ADOPTION_TIMEOUT_MS = 30_000;

/** A cluster of `labels.length` instances on a fresh schema; everything is torn down after `fn`. */
async function withCluster(
  labels: string[],
  fn: (instances: Instance[], runLog: string) => Promise<void>,
  leaseMs = LEASE_MS,
): Promise<void> {
  const dir = await tempDir('taskvisor-scale-');
  const { schema, drop } = await freshSchema('tv_scale');
  const runLog = join(dir.path, 'runs.log');
  const instances: Instance[] = [];
  try {
    const config = await writeClusterConfig(dir.path, schema, leaseMs);
    // One after the other is not required (migrations take an advisory lock); at once is the harder case.
    instances.push(...(await Promise.all(labels.map((label) => startInstance(config, label, runLog, dir.path)))));
    await fn(instances, runLog);
  } finally {
    await stopAll(instances);
    await drop();
    await dir.remove();
  }
}

/** Collects `notifications/tasks` frames a client receives. */
function collectFrames(instance: Instance): Json[] {
  const frames: Json[] = [];
  const previous = instance.client.client.fallbackNotificationHandler;
  instance.client.client.fallbackNotificationHandler = async (notification) => {
    if ((notification as Json).method === 'notifications/tasks') frames.push((notification as Json).params as Json);
    await previous?.(notification);
  };
  return frames;
}

const textOf = (task: Json): string | undefined =>
  ((task.result as Json | undefined)?.content as { text?: string }[] | undefined)?.[0]?.text;

// Five multi-process scenarios: about a minute on a quiet machine, several at load 20 (120 s cancelled the last three).
describe('scale-out on PostgreSQL', { timeout: 600_000 }, () => {
  it('two instances: created on A, the task is read, answered, listened to and cancelled through B', () =>
    withCluster(['A', 'B'], async ([a, b], runLog) => {
      assert.notEqual(a!.instanceId, b!.instanceId);
      const frames = collectFrames(b!);

      // tasks/get on B right after the create response on A (T-07).
      const asked = await createTask(a!.client, 'ask_name');
      const seen = resultOf(await getTask(b!.client, asked));
      assert.equal(seen.taskId, asked);
      assert.ok(seen.status === 'working' || seen.status === 'input_required', `status ${String(seen.status)}`);

      // A listen opened on B gets the frames of the task running on A.
      const subscription = await b!.client.client.listen({ taskIds: [asked] } as never);
      await pollTask(b!.client, asked, (task) => task.status === 'input_required', { timeoutMs: 20_000 });
      await waitFor(() => frames.some((f) => f.taskId === asked && f.status === 'input_required'), {
        what: 'input_required frame on B',
        timeoutMs: 20_000,
      });

      // tasks/update on B reaches the worker on A (T-20: acknowledged with resultType complete).
      const ack = resultOf(await updateTask(b!.client, asked, { name: { action: 'accept', content: { name: 'Luca' } } }));
      assert.equal(ack.resultType, 'complete');
      const done = await waitFor(() => frames.find((f) => f.taskId === asked && f.status === 'completed'), {
        what: 'completed frame on B',
        timeoutMs: 20_000,
      });
      assert.equal(textOf(done), 'Hello, Luca, from A', 'the worker on A got the answer given to B');
      assert.equal(done._meta !== undefined && (done._meta as Json)['io.modelcontextprotocol/subscriptionId'] !== undefined, true);
      await subscription.close();

      // tasks/cancel on B reaches the worker on A (T-23, T-24).
      const long = await createTask(a!.client, 'tracked_wait', { ms: 60_000 });
      await waitFor(async () => (await runStarts(runLog)).get(long), { what: 'the run on A to start', timeoutMs: 20_000 });
      const cancelAck = resultOf(await rawRequest(b!.client, { method: 'tasks/cancel', params: { taskId: long, _meta: envelope() } }));
      assert.equal(cancelAck.resultType, 'complete');
      const { task: cancelled } = await pollTask(b!.client, long, isTerminalTask, { timeoutMs: 20_000 });
      assert.equal(cancelled.status, 'cancelled');
      const { task: onA } = await pollTask(a!.client, long, isTerminalTask, { timeoutMs: 20_000 });
      assert.equal(onA.status, 'cancelled');

      const starts = await runStarts(runLog);
      assert.deepEqual(starts.get(asked), ['A']);
      assert.deepEqual(starts.get(long), ['A']);
    }));

  it('kill -9 of the owner mid-task: a survivor adopts; replayable tasks finish there, others fail with a statusMessage, a cancel sent meanwhile applies', () =>
    withCluster(['A', 'B'], async ([a, b], runLog) => {
      const replayed = await createTask(a!.client, 'tracked_wait', { ms: 1_000, holdOn: 'A' });
      const once = await createTask(a!.client, 'wait_once', { ms: 60_000 });
      const toCancel = await createTask(a!.client, 'tracked_wait', { ms: 600_000 });
      await waitFor(
        async () => {
          const starts = await runStarts(runLog);
          return starts.has(replayed) && starts.has(once) && starts.has(toCancel);
        },
        { what: 'the runs to start on A', timeoutMs: 20_000 },
      );
      await a!.child.kill('SIGKILL');
      // Cancelled through B while its owner is dead: the command waits for the task's next owner (T-24).
      const cancelAck = resultOf(await rawRequest(b!.client, { method: 'tasks/cancel', params: { taskId: toCancel, _meta: envelope() } }));
      assert.equal(cancelAck.resultType, 'complete');

      const { task: finished } = await pollTask(b!.client, replayed, isTerminalTask, { timeoutMs: ADOPTION_TIMEOUT_MS, intervalMs: 100 });
      assert.equal(finished.status, 'completed');
      assert.equal(textOf(finished), 'finished on B');
      const { task: failed } = await pollTask(b!.client, once, isTerminalTask, { timeoutMs: ADOPTION_TIMEOUT_MS, intervalMs: 100 });
      assert.equal(failed.status, 'failed');
      // Its instance did not restart: it lost its lease, and the message says so.
      assert.match(String(failed.statusMessage), /lost its cluster lease/);
      const { task: cancelled } = await pollTask(b!.client, toCancel, isTerminalTask, { timeoutMs: ADOPTION_TIMEOUT_MS, intervalMs: 100 });
      assert.equal(cancelled.status, 'cancelled', 'the cancel sent while the owner was dead reached the adopter');
      const starts = await runStarts(runLog);
      assert.deepEqual(starts.get(replayed), ['A', 'B']);
      assert.deepEqual(starts.get(once), ['A'], 'a task that cannot be replayed is not run again');
    }));

  it('three instances: the two survivors race to adopt; every task is adopted and run again by exactly one of them', () =>
    withCluster(['A', 'B', 'C'], async ([a, b, c], runLog) => {
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push(await createTask(a!.client, 'tracked_wait', { ms: 1_500, holdOn: 'A' }));
      await waitFor(
        async () => {
          const starts = await runStarts(runLog);
          return ids.every((id) => starts.has(id));
        },
        { what: 'every run to start on A', timeoutMs: 20_000 },
      );
      await a!.child.kill('SIGKILL');

      for (const id of ids) {
        const { task } = await pollTask(b!.client, id, isTerminalTask, { timeoutMs: ADOPTION_TIMEOUT_MS, intervalMs: 100 });
        assert.equal(task.status, 'completed', `task ${id}: ${JSON.stringify(task)}`);
      }
      const starts = await runStarts(runLog);
      const winners = new Set<string>();
      for (const id of ids) {
        const runs = starts.get(id)!;
        assert.equal(runs.length, 2, `task ${id} ran ${JSON.stringify(runs)}: once on A, once on one survivor`);
        assert.equal(runs[0], 'A');
        assert.ok(runs[1] === 'B' || runs[1] === 'C');
        winners.add(runs[1]);
        const { task } = await pollTask(c!.client, id, isTerminalTask);
        assert.equal(textOf(task), `finished on ${runs[1]}`, 'the result comes from the survivor that ran it');
      }
      assert.ok(winners.size >= 1);
    }));

  it("a paused owner (SIGSTOP past its lease) loses its tasks: the survivor runs them, the old owner's late writes are fenced", () =>
    withCluster(['A', 'B'], async ([a, b], runLog) => {
      const id = await createTask(a!.client, 'tracked_wait', { ms: 1_000, holdOn: 'A' });
      await waitFor(async () => (await runStarts(runLog)).get(id), { what: 'the run on A to start', timeoutMs: 20_000 });
      a!.child.process.kill('SIGSTOP');
      try {
        await waitFor(async () => (await runStarts(runLog)).get(id)?.includes('B'), {
          what: 'B to adopt and run the task',
          timeoutMs: ADOPTION_TIMEOUT_MS,
          intervalMs: 100,
        });
      } finally {
        a!.child.process.kill('SIGCONT');
      }
      const { task } = await pollTask(b!.client, id, isTerminalTask, { timeoutMs: 30_000, intervalMs: 100 });
      assert.equal(task.status, 'completed');
      assert.equal(textOf(task), 'finished on B', "only the adopter's writes land (fencing token)");
      // A noticed: it stopped running the task (lease lost, or its write was fenced) and keeps serving.
      await a!.child.waitForOutput(/lost its lease|no longer run by this instance/, { timeoutMs: 30_000 });
      const after = await waitFor(async () => createTask(a!.client, 'tracked_wait', { ms: 0 }), {
        what: 'A to serve again',
        timeoutMs: 30_000,
        intervalMs: 200,
      });
      const { task: fresh } = await pollTask(b!.client, after, isTerminalTask, { timeoutMs: 20_000 });
      assert.equal(fresh.status, 'completed');
      assert.equal(textOf(fresh), 'finished on A');
      assert.equal((await runStarts(runLog)).get(id)?.filter((label) => label === 'B').length, 1);
    }));

  it('a network blip (pg_terminate_backend of every connection of both instances) is survived: listen, update and create still work', () =>
    withCluster(
      ['A', 'B'],
      async ([a, b]) => {
        const frames = collectFrames(b!);
        const asked = await createTask(a!.client, 'ask_name');
        const subscription = await b!.client.client.listen({ taskIds: [asked] } as never);
        await pollTask(b!.client, asked, (task) => task.status === 'input_required', { timeoutMs: 20_000 });

        const killed = await pgQuery<{ ok: boolean }>(
          `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = ANY($1)`,
          [[a!.instanceId, b!.instanceId].flatMap((id) => [`taskvisor ${id}`, `taskvisor ${id} (listen)`])],
        );
        assert.ok(killed.rows.length >= 4, `terminated ${killed.rows.length} connections (pool + listen of each)`);

        // The first request after the blip may meet a dead pooled connection; the instance keeps serving.
        await waitFor(async () => resultOf(await updateTask(b!.client, asked, { name: { action: 'accept', content: { name: 'Ada' } } })), {
          what: 'tasks/update on B after the blip',
          timeoutMs: 20_000,
          intervalMs: 200,
        });
        const done = await waitFor(() => frames.find((f) => f.taskId === asked && f.status === 'completed'), {
          what: 'completed frame on B after the blip',
          timeoutMs: 30_000,
        });
        assert.equal(textOf(done), 'Hello, Ada, from A');
        await subscription.close();

        const fresh = await waitFor(async () => createTask(b!.client, 'tracked_wait', { ms: 0 }), {
          what: 'a create on B after the blip',
          timeoutMs: 20_000,
          intervalMs: 200,
        });
        const { task } = await pollTask(a!.client, fresh, isTerminalTask, { timeoutMs: 20_000 });
        assert.equal(task.status, 'completed');
        // Both instances still hold their leases (nothing was adopted away from a live instance).
        assert.equal(a!.child.process.exitCode, null);
        assert.ok(!/lost its lease/.test(a!.child.stderr + b!.child.stderr), `no lease lost:\n${a!.child.stderr}\n${b!.child.stderr}`);
      },
      BLIP_LEASE_MS,
    ));
});
