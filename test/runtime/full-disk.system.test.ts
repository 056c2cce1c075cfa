/**
 * A task finishing while the disk is full, on a real full filesystem (a
 * store on a 2 MiB tmpfs): `tasks/get` must not answer `completed` while the
 * log says "could not store task …; retrying" and the file still says
 * `working` (kill -9 would then bring it back `failed`). The task answers
 * what is on disk until space comes back and the retry lands. Needs `mount -t tmpfs` (root): skipped otherwise.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { createRuntime, type Logger, type TaskStore } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { LowdbTaskStore, SqliteTaskStore } from '../../src/store/index.js';
import { connect, envelope } from '../support/extTasksClient.js';

async function mountTmpfs(): Promise<{ dir: string; unmount(): Promise<void> } | undefined> {
  const dir = await mkdtemp(join(tmpdir(), 'taskvisor-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    await rmdir(dir);
    return undefined;
  }
  return {
    dir,
    unmount: async () => {
      execFileSync('umount', [dir], { stdio: 'ignore' });
      await rmdir(dir);
    },
  };
}

/** Writes filler files until the filesystem refuses (ENOSPC). */
async function fill(dir: string): Promise<void> {
  const chunk = Buffer.alloc(64 * 1024, 1);
  for (let i = 0; ; i++) {
    try {
      await writeFile(join(dir, `filler-${i}`), chunk);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
      throw error;
    }
  }
  // Small files too, so no block is left for a record.
  for (let i = 0; i < 10_000; i++) {
    try {
      await writeFile(join(dir, `crumb-${i}`), 'x');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOSPC') return;
      throw error;
    }
  }
}

const until = async (check: () => boolean | Promise<boolean>) => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 10));
};

for (const kind of ['lowdb', 'sqlite'] as const) {
  describe(`${kind} on a full tmpfs: a completed task is shown only once its record is on disk`, () => {
    it('tasks/get answers working while the disk is full, completed once space returns', async (t) => {
      const mounted = await mountTmpfs();
      if (!mounted) return t.skip('cannot mount tmpfs here (needs root)');
      const storeDir = join(mounted.dir, 'store');
      const fillerDir = join(mounted.dir, 'filler');
      const make = (): TaskStore =>
        kind === 'lowdb' ? new LowdbTaskStore({ dir: storeDir }) : new SqliteTaskStore({ file: join(storeDir, 'tasks.sqlite') });
      const errors: string[] = [];
      const logger: Logger = { info: () => {}, error: (message) => errors.push(message) };
      const runtime = createRuntime({ store: make(), logger, reapIntervalMs: 0 });
      let finish!: () => void;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      runtime.tool('sleep', { taskBehavior: 'always', inputSchema: z.object({}) }, async () => {
        await finished;
        return 'slept';
      });
      await runtime.start();
      const http = await listenHttp(runtime, { port: 0 });
      const client = await connect({ kind: 'http', url: http.url });
      try {
        const created = (await client.raw({
          method: 'tools/call',
          params: { name: 'sleep', arguments: {}, _meta: envelope() },
        } as never)) as unknown as {
          result: { taskId: string };
        };
        const taskId = created.result.taskId;
        await mkdir(fillerDir);
        await fill(fillerDir);
        finish();
        await until(() => errors.some((message) => message.includes(`could not store task ${taskId}`)));
        const get = async () =>
          (
            (await client.raw({ method: 'tasks/get', params: { taskId, _meta: envelope() } } as never)) as unknown as {
              result: { status: string };
            }
          ).result.status;
        assert.equal(await get(), 'working', 'tasks/get answered a status the disk does not hold');
        await rm(fillerDir, { recursive: true, force: true });
        await runtime.flushed();
        assert.equal(await get(), 'completed');
        await client.close();
        await http.close();
        await runtime.close();
        // What the client saw last is what the disk holds.
        const reopened = make();
        await reopened.open();
        assert.equal((await reopened.get(taskId))?.status, 'completed');
        await reopened.close();
      } finally {
        await rm(fillerDir, { recursive: true, force: true });
        await client.close().catch(() => undefined);
        await http.close().catch(() => undefined);
        await runtime.close();
        await mounted.unmount();
      }
    });
  });
}
