/**
 * One store, one owner. Two real `taskvisor serve`
 * processes on the same embedded store: the second one (also one whose port
 * is taken) exits 1 with "store … is in use by process N" having read and
 * written nothing, so the first one's live tasks are never rewritten `failed`
 * and finish as they would have. The lock is the kernel's: after kill -9 of
 * the holder the next process takes the store at once (and recovers it).
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { LowdbTaskStore, SqliteTaskStore, type TaskStore } from '../../src/store/index.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import {
  CLI,
  createTask,
  DEMO_TOOLS,
  isTerminalTask,
  pollTask,
  resultOf,
  spawnNode,
  tempDir,
  updateTask,
  type Child,
} from '../support/processes.js';

const SERVING_HTTP = /serving MCP over Streamable HTTP at (\S+)\n/;

for (const kind of ['lowdb', 'sqlite'] as const) {
  describe(`${kind}: two taskvisor serve processes on one store`, () => {
    const children: Child[] = [];
    const clients: ConnectedClient[] = [];
    let removeDir: (() => Promise<void>) | undefined;
    after(async () => {
      for (const client of clients) await client.close().catch(() => undefined);
      for (const child of children) await child.kill('SIGKILL');
      await removeDir?.();
    });

    it('the second exits 1 naming the first, touching nothing; kill -9 frees the lock', async () => {
      const dir = await tempDir(`taskvisor-owner-${kind}-`);
      removeDir = dir.remove;
      const config = join(dir.path, 'taskvisor.yaml');
      const storeLine = kind === 'lowdb' ? '  kind: lowdb\n  dir: ./store' : '  kind: sqlite\n  file: ./store/tasks.sqlite';
      await writeFile(config, `store:\n${storeLine}\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\n`);
      /** A read-only view (no lock), as `taskvisor tasks list` has. */
      const readStatus = async (taskId: string) => {
        const store: TaskStore =
          kind === 'lowdb'
            ? new LowdbTaskStore({ dir: join(dir.path, 'store'), lock: false })
            : new SqliteTaskStore({ file: join(dir.path, 'store', 'tasks.sqlite'), lock: false });
        await store.open();
        try {
          return (await store.get(taskId))?.status;
        } finally {
          await store.close();
        }
      };
      const serve = (port = '0') => {
        const child = spawnNode([CLI, 'serve', '--config', config, '--http', `127.0.0.1:${port}`], { cwd: dir.path });
        children.push(child);
        return child;
      };

      const first = serve();
      const [, url] = await first.waitForOutput(SERVING_HTTP);
      const client = await connect({ kind: 'http', url: url! });
      clients.push(client);
      // Waits for its input: live until this test answers it, however slow the refused starts are.
      const finishing = await createTask(client, 'hello_world');
      await pollTask(client, finishing, (task) => task.status === 'input_required', { timeoutMs: 30_000 });
      const crashing = await createTask(client, 'sleep', { ms: 600_000 });

      // A second server on a free port, and one on the first one's port (EADDRINUSE would come after the lock).
      const port = new URL(url!).port;
      for (const second of [serve(), serve(port)]) {
        const outcome = await Promise.race([second.exited, second.waitForOutput(SERVING_HTTP).then(() => 'serving' as const)]);
        assert.notEqual(outcome, 'serving', `the second server started serving the first one's store\n${second.stderr}`);
        assert.equal((await second.exited).code, 1, `the second server did not exit 1\n${second.stderr}`);
        assert.match(
          second.stderr,
          new RegExp(
            `store ${kind} .+ is in use by process ${first.process.pid} \\(another taskvisor serve\\?\\): one server per store; .*--store memory`,
          ),
        );
        assert.doesNotMatch(second.stderr, /recovered|EADDRINUSE/);
      }
      assert.equal(await readStatus(finishing), 'input_required', 'the refused server rewrote a live task');
      assert.equal(await readStatus(crashing), 'working', 'the refused server rewrote a live task');

      // The first server finishes its task as if nothing happened: a finished status never changes.
      resultOf(await updateTask(client, finishing, { name: { action: 'accept', content: { name: 'Ada' } } }));
      const { task: done } = await pollTask(client, finishing, isTerminalTask, { timeoutMs: 30_000 });
      assert.equal(done.status, 'completed');
      assert.equal(await readStatus(finishing), 'completed');

      // kill -9: the kernel drops the lock with the process; the next server takes the store and recovers it.
      await client.close();
      await first.kill('SIGKILL');
      const third = serve();
      await third.waitForOutput(SERVING_HTTP);
      await third.waitForOutput(/recovered unfinished tasks: 0 resumed, 1 failed/);
      assert.equal(await readStatus(crashing), 'failed');
      assert.equal(await readStatus(finishing), 'completed');
      // A clean stop releases it too.
      third.process.kill('SIGTERM');
      assert.equal((await third.exited).code, 0);
      const fourth = serve();
      await fourth.waitForOutput(SERVING_HTTP);
      await fourth.kill('SIGTERM');
    });
  });
}
