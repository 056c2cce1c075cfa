/**
 * `taskvisor tasks list|show` reading a store as a new user meets it: the
 * demo's store with `--demo` (no config to find), a config's store path
 * resolved from the config file's folder wherever the command runs, a store
 * that is not there reported and not made, and `show` taking the start of a
 * task id (a clear error naming the matches when several tasks share it).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TasksClient } from '../../src/client/index.js';
import { createRuntime, silentLogger } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import demoTools from '../../examples/demo/tools.js';
import { CLI, runNode, tempDir } from '../support/processes.js';

let dir: Awaited<ReturnType<typeof tempDir>>;
let elsewhere: Awaited<ReturnType<typeof tempDir>>;
let config = '';
const taskIds: string[] = [];

before(async () => {
  dir = await tempDir();
  elsewhere = await tempDir();
  // The demo's store where `serve --demo` keeps it: ./.taskvisor in the folder it runs in.
  const runtime = createRuntime({ store: { kind: 'lowdb', dir: join(dir.path, '.taskvisor') }, logger: silentLogger });
  runtime.use(...demoTools);
  await runtime.start();
  const client = await TasksClient.connect({ url: (await listenHttp(runtime, { port: 0 })).url });
  try {
    // 17 tasks: two of them share the first hex digit of their ids.
    await Promise.all(
      Array.from({ length: 17 }, (_, n) =>
        client.callTool('sleep', { ms: 250, message: `nap ${n}` }, { onTask: (taskId) => void taskIds.push(taskId) }),
      ),
    );
  } finally {
    await client.close();
    await runtime.close();
  }
  // A config in a folder of its own naming that store relative to itself.
  await mkdir(join(dir.path, 'conf'));
  config = join(dir.path, 'conf', 'taskvisor.yaml');
  await writeFile(config, 'store:\n  kind: lowdb\n  dir: ../.taskvisor\n');
});
after(async () => {
  await dir?.remove();
  await elsewhere?.remove();
});

describe('taskvisor tasks list|show', { concurrency: 2 }, () => {
  it('--demo reads the store of serve --demo run in this folder; --config resolves the store from the config file, from anywhere', async () => {
    const [demo, configured] = await Promise.all([
      runNode([CLI, 'tasks', 'list', '--demo', '--json'], { cwd: dir.path }),
      runNode([CLI, 'tasks', 'list', '--config', config, '--json'], { cwd: elsewhere.path }),
    ]);
    for (const run of [demo, configured]) {
      assert.equal(run.code, 0, run.stderr);
      const listed = (JSON.parse(run.stdout) as Array<{ taskId: string }>).map((task) => task.taskId);
      assert.deepEqual(listed.sort(), [...taskIds].sort());
    }
    assert.equal(existsSync(join(elsewhere.path, '.taskvisor')), false, 'nothing made where the command ran');
  });

  it('a store that is not there is reported, not made: the default (with why there), and a path the config names', async () => {
    await writeFile(join(elsewhere.path, 'missing.yaml'), 'store:\n  kind: lowdb\n  dir: ./state\n');
    const [demo, named] = await Promise.all([
      runNode([CLI, 'tasks', 'list', '--demo'], { cwd: elsewhere.path }),
      runNode([CLI, 'tasks', 'show', 'abc', '--config', join(elsewhere.path, 'missing.yaml')], { cwd: dir.path }),
    ]);
    assert.equal(demo.code, 1);
    assert.match(
      demo.stderr,
      /^taskvisor: .+taskvisor\.yaml: no lowdb store at .+\.taskvisor \(the config names no store, so it is the default, \.\/\.taskvisor in the working directory: run this in the folder the server runs in, or name the store in the config\); a server makes it when it first starts\n$/,
    );
    assert.equal(named.code, 1);
    assert.match(named.stderr, /: no lowdb store at .+state \(store\.dir \.\/state is relative to the config file\)/);
    assert.equal(existsSync(join(elsewhere.path, '.taskvisor')), false, 'the default store was not made');
    assert.equal(existsSync(join(elsewhere.path, 'state')), false, 'the named store was not made');
  });

  it('show takes the start of an id when only one task id starts so; an ambiguous start names the matches', async () => {
    const id = taskIds[0]!;
    const unique = [...Array(32).keys()]
      .map((n) => id.slice(0, n + 1))
      .find((start) => taskIds.filter((other) => other.startsWith(start)).length === 1)!;
    const shared = taskIds.map((taskId) => taskId[0]!).find((digit, _, digits) => digits.filter((other) => other === digit).length > 1)!;
    const [shown, ambiguous, unknown] = await Promise.all([
      runNode([CLI, 'tasks', 'show', unique, '--demo'], { cwd: dir.path }),
      runNode([CLI, 'tasks', 'show', shared, '--demo'], { cwd: dir.path }),
      runNode([CLI, 'tasks', 'show', 'xyz', '--demo'], { cwd: dir.path }),
    ]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`^task {6}${id}\ntool {6}sleep\n`));
    assert.equal(ambiguous.code, 1);
    const matches = taskIds.filter((taskId) => taskId.startsWith(shared));
    assert.match(
      ambiguous.stderr,
      new RegExp(`^taskvisor: task id ${shared} is ambiguous: ${matches.length} tasks start with it; give more of the id:\n`),
    );
    for (const match of matches) assert.ok(ambiguous.stderr.includes(`  ${match}  completed  sleep`), ambiguous.stderr);
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stderr, 'taskvisor: no task xyz in the store\n');
  });
});
