/**
 * `taskvisor workflows validate|run` as authors use them: real child
 * processes of the CLI, the example workflows and temp folders.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { CLI, REPO_ROOT, runNode, spawnNode, tempDir } from '../support/processes.js';

const EXAMPLES = path.join(REPO_ROOT, 'examples', 'workflows', 'taskvisor.json');

describe('taskvisor workflows', () => {
  it('validate accepts the three examples (tools checked against the config)', async () => {
    const { code, stdout, stderr } = await runNode([CLI, 'workflows', 'validate', '--config', EXAMPLES]);
    assert.equal(code, 0, stderr);
    for (const tool of ['workflow_deploy', 'workflow_service-report', 'workflow_release-train']) assert.match(stdout, new RegExp(tool));
    assert.match(stderr, /3 workflow\(s\) valid/);
  });

  it('validate reports every bad file with file:line:col, path and field, and exits 1', async (t) => {
    const dir = await tempDir('taskvisor-wf-cli-');
    t.after(() => dir.remove());
    await mkdir(path.join(dir.path, 'flows'));
    await writeFile(path.join(dir.path, 'flows', 'typo.yaml'), 'steps:\n  - id: a\n    tool: echo\n    args: { value: "{{ input. }}" }\n');
    await writeFile(
      path.join(dir.path, 'flows', 'args.yaml'),
      'args:\n  n: { type: integer, pattern: "x" }\nsteps:\n  - { id: a, tool: echo }\n',
    );
    await writeFile(path.join(dir.path, 'flows', 'unknown.yaml'), 'steps:\n  - { id: a, tool: no_such_tool }\n');
    await writeFile(
      path.join(dir.path, 'taskvisor.yaml'),
      `tools: ["${path.join(REPO_ROOT, 'test', 'workflows', 'fixtures', 'tools.ts')}"]\nworkflows: { dir: ./flows }\n`,
    );
    const { code, stderr } = await runNode([CLI, 'workflows', 'validate', '--config', path.join(dir.path, 'taskvisor.yaml')], {
      cwd: dir.path,
    });
    assert.equal(code, 1, stderr);
    assert.match(stderr, /typo\.yaml:4:\d+: steps\[0\]\.args\.value: invalid expression \{\{ input\. \}\}/);
    assert.match(stderr, /args\.yaml:2:\d+: args\.n\.pattern: only allowed for string arguments/);
    assert.match(stderr, /unknown\.yaml: a step calls the tool no_such_tool, which the config does not provide/);
  });

  it('run shows progress on stderr and prints the shaped result; a declined approval fails at that step (exit 1)', async () => {
    const staging = await runNode([
      CLI,
      'workflows',
      'run',
      'deploy',
      '--config',
      EXAMPLES,
      '--arg',
      'env=staging',
      '--arg',
      'version=1.2.3',
    ]);
    assert.equal(staging.code, 0, staging.stderr);
    assert.match(staging.stderr, /Step 4\/5: rollout — rolled out to 100% of staging/);
    assert.deepEqual(JSON.parse(staging.stdout), {
      env: 'staging',
      version: '1.2.3',
      deployed: true,
      url: 'https://staging.example.test/',
      backup: 'bk-pre-1.2.3',
    });

    const child = spawnNode([
      CLI,
      'workflows',
      'run',
      'deploy',
      '--config',
      EXAMPLES,
      '--arg',
      'env=production',
      '--arg',
      'version=1.2.3',
      '--json',
    ]);
    await child.waitForOutput(/\? Deploy 1\.2\.3 to production\?/, { stream: 'stderr' });
    child.process.stdin!.end('\n'); // an empty line declines
    const { code } = await child.exited;
    assert.equal(code, 1, child.stderr);
    const result = JSON.parse(child.stdout) as {
      isError: boolean;
      structuredContent: { failedStep: string; results: Record<string, unknown> };
    };
    assert.equal(result.isError, true);
    assert.equal(result.structuredContent.failedStep, 'approve');
    // onFailure ran: the backup was restored.
    assert.deepEqual(result.structuredContent.results.restore, { restored: 'bk-pre-1.2.3' });

    const bad = await runNode([CLI, 'workflows', 'run', 'deploy', '--config', EXAMPLES, '--arg', 'env=qa', '--arg', 'version=1']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /Invalid arguments for tool workflow_deploy: .*env.*version|Invalid arguments for tool workflow_deploy: env/);
  });

  it('serve refuses to start with an invalid workflow or a workflow whose name collides with a tool, naming file, line and field', async (t) => {
    const dir = await tempDir('taskvisor-wf-serve-');
    t.after(() => dir.remove());
    await mkdir(path.join(dir.path, 'flows'));
    const tools = path.join(REPO_ROOT, 'test', 'workflows', 'fixtures', 'tools.ts');
    await writeFile(
      path.join(dir.path, 'taskvisor.yaml'),
      `store: { kind: memory }\ntools: ["${tools}"]\nworkflows: { dir: ./flows, prefix: "" }\n`,
    );
    await writeFile(
      path.join(dir.path, 'flows', 'bad.yaml'),
      'steps:\n  - id: a\n    tool: echo\n    condition: { fromStep: later, expect: { success: true } }\n',
    );
    const invalid = await runNode([CLI, 'serve', '--config', 'taskvisor.yaml', '--http', '127.0.0.1:0'], { cwd: dir.path });
    assert.equal(invalid.code, 1, invalid.stderr);
    assert.match(invalid.stderr, /taskvisor\.yaml:3:\d+: workflows\.dir: \.\/flows:/);
    assert.match(invalid.stderr, /bad\.yaml:4:\d+: steps\[0\]\.condition\.fromStep: "later" is not an earlier step/);

    await writeFile(path.join(dir.path, 'flows', 'bad.yaml'), 'steps:\n  - { id: a, tool: record, args: { label: x } }\n');
    await writeFile(path.join(dir.path, 'flows', 'echo.yaml'), 'steps:\n  - { id: a, tool: record, args: { label: x } }\n');
    const collision = await runNode([CLI, 'serve', '--config', 'taskvisor.yaml', '--http', '127.0.0.1:0'], { cwd: dir.path });
    assert.equal(collision.code, 1, collision.stderr);
    assert.match(collision.stderr, /A tool named "echo" is already registered \(a workflow tool name must not collide with another tool\)/);
  });
});
