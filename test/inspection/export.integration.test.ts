/**
 * Machine export (xstate-notes §3): every registered machine exports as
 * Stately JSON, Mermaid and Graphviz DOT; the diagrams name every state and
 * event; DOT renders with `dot` where Graphviz is installed; the diagram in
 * docs/machines.md is the one the code draws today; and
 * `taskvisor machines` works from the command line.
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { AnyStateMachine } from 'xstate';
import { MACHINES, findMachine, type MachineEntry } from '../../machines/index.js';
import { TASK_MACHINE_VERSION, taskMachine } from '../../machines/task/index.js';
import { machinesCommand } from '../../src/cli/machines.js';
import { toDot, toMermaid, toStatelyJson } from '../../src/inspection/exportMachine.js';
import { describeMachine } from '../../src/inspection/machineGraph.js';
import { extractGeneratedBlock, generatedBlock, updateMachineDocs } from '../../src/inspection/machineDocs.js';
import { edgeCaseMachine } from './edgeCaseMachine.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(REPO_ROOT, 'bin', 'taskvisor.js');
const DOT_BINARY = spawnSync('which', ['dot'], { encoding: 'utf8' }).stdout.trim();

interface LiveNode {
  id: string;
  key: string;
  type: string;
  states: Record<string, LiveNode>;
}

/** Every state node below the root, depth first (walked on the machine itself, not on the exporter's model). */
function allStates(machine: AnyStateMachine): LiveNode[] {
  const out: LiveNode[] = [];
  const walk = (node: LiveNode) => {
    for (const child of Object.values(node.states)) {
      out.push(child);
      walk(child);
    }
  };
  walk(machine.root);
  return out;
}

/** The event types a machine handles (xstate's own list), without xstate's internal ones (`xstate.after.…`). */
const userEvents = (machine: AnyStateMachine) =>
  (machine.root.events as string[]).filter((type) => !type.startsWith('xstate.') && type !== '');

/** `{`/`}` outside double-quoted strings stay balanced and never go negative. */
function assertBalancedBraces(text: string) {
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '{') depth++;
    else if (c === '}') {
      depth--;
      assert.ok(depth >= 0, `unbalanced } at offset ${i}`);
    }
  }
  assert.equal(quoted, false, 'unterminated string');
  assert.equal(depth, 0, 'unbalanced braces');
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Runs `dot -Tsvg` on `source` when Graphviz is installed. */
function renderWithDot(source: string) {
  const result = spawnSync(DOT_BINARY, ['-Tsvg'], { input: source, encoding: 'utf8' });
  assert.equal(result.status, 0, `dot -Tsvg failed: ${result.stderr}`);
  assert.match(result.stdout, /<svg/);
}

/** Checks shared by every machine, registered or not. */
function checkExports(machine: AnyStateMachine) {
  it('JSON: the toJSON() definition, and it round-trips through JSON.parse', () => {
    const json = toStatelyJson(machine);
    assert.equal(json.id, machine.id);
    const text = JSON.stringify(json, null, 2);
    assert.deepEqual(JSON.parse(text), json);
    assert.equal(JSON.stringify(json), JSON.stringify(machine.toJSON()));
    assert.deepEqual(Object.keys(json.states as object), Object.keys(machine.root.states));
  });

  it('Mermaid: a stateDiagram-v2 that declares every state and labels every event', () => {
    const mermaid = toMermaid(machine);
    assert.match(mermaid, /^stateDiagram-v2\n/);
    assert.ok(mermaid.endsWith('\n'));
    assertBalancedBraces(mermaid);
    for (const state of allStates(machine)) {
      const label = state.type === 'history' ? 'H\\*?' : escapeRegExp(state.key);
      assert.match(mermaid, new RegExp(`^ *state "${label}" as \\w+( \\{)?$`, 'm'), `state ${state.id} is declared`);
    }
    for (const type of userEvents(machine)) {
      assert.match(mermaid, new RegExp(` --> \\S+ : ${escapeRegExp(type)}( |$)`, 'm'), `event ${type} labels an edge`);
    }
    for (const line of mermaid.split('\n').slice(1, -1)) {
      assert.match(
        line,
        /^ +(\[\*\] --> \w+|\w+ --> (\w+|\[\*\])( : [^#;"\n]+)?|state "[^"#;]*" as \w+( \{)?|\}|--)$/,
        `line ${JSON.stringify(line)}`,
      );
    }
    assert.equal(toMermaid(machine), mermaid, 'deterministic');
  });

  it('DOT: a digraph with balanced braces and a node for every state', () => {
    const dot = toDot(machine);
    assert.match(dot, /^digraph "[^"]+" \{\n/);
    assert.ok(dot.endsWith('}\n'));
    assertBalancedBraces(dot);
    for (const state of allStates(machine)) {
      assert.match(dot, new RegExp(`^ *"${escapeRegExp(state.id)}" \\[`, 'm'), `node for ${state.id}`);
      if (Object.keys(state.states).length > 0) assert.ok(dot.includes(`subgraph "cluster_${state.id}" {`), `cluster for ${state.id}`);
      if (state.type === 'final') assert.match(dot, new RegExp(`^ *"${escapeRegExp(state.id)}" \\[.*shape=doublecircle`, 'm'));
    }
    for (const type of userEvents(machine)) {
      assert.match(dot, new RegExp(`label="${escapeRegExp(type)}[ \\\\"]`), `event ${type} labels an edge`);
    }
    assert.equal(toDot(machine), dot, 'deterministic');
  });

  it(
    'DOT renders with Graphviz (dot -Tsvg)',
    { skip: DOT_BINARY === '' && 'Graphviz `dot` is not installed: bash scripts/ensure-test-tools.sh (apt-get install graphviz)' },
    () => {
      renderWithDot(toDot(machine));
    },
  );
}

describe('the machine registry', () => {
  it('lists the task machine at TASK_MACHINE_VERSION', () => {
    const task = findMachine('task');
    assert.ok(task);
    assert.equal(task.machine, taskMachine);
    assert.equal(task.version, TASK_MACHINE_VERSION);
    assert.ok(task.description.length > 0);
  });

  it('has unique, file-name-safe names and positive integer versions', () => {
    assert.ok(MACHINES.length > 0);
    assert.equal(new Set(MACHINES.map((entry) => entry.name)).size, MACHINES.length);
    for (const entry of MACHINES) {
      assert.match(entry.name, /^[a-z][a-z0-9-]*$/);
      assert.ok(Number.isInteger(entry.version) && entry.version > 0, `${entry.name} version`);
      assert.ok(entry.description.trim().length > 0, `${entry.name} description`);
    }
  });
});

for (const entry of MACHINES) {
  describe(`exporting the ${entry.name} machine`, () => {
    checkExports(entry.machine);

    it('uses only named guards and actions, so the diagrams show all of them (I-8)', () => {
      for (const edge of describeMachine(entry.machine).transitions) {
        const where = `${edge.sourceId} on ${edge.eventType}`;
        assert.equal(edge.inlineGuard, false, `inline guard at ${where}`);
        assert.equal(edge.inlineActions, 0, `inline action at ${where}`);
      }
    });
  });
}

describe('the task machine diagram', () => {
  const mermaid = toMermaid(taskMachine);
  const dot = toDot(taskMachine);

  it('Mermaid: initial and final states, the active box, guarded alternatives, #task.cancelled targets, internal loops', () => {
    const lines = new Set(mermaid.split('\n').map((line) => line.trim()));
    for (const line of [
      '[*] --> task_active',
      'state "active" as task_active {',
      '[*] --> task_active_working',
      'task_completed --> [*]',
      'task_failed --> [*]',
      'task_cancelled --> [*]',
      // INPUT_NEEDED in working is an array of two guarded transitions; the first targets #task.cancelled.
      'task_active_working --> task_cancelled : INPUT_NEEDED [isCancelRequested] / clearInputRequests, noteCancelled, touch',
      'task_active_working --> task_active_input_required : INPUT_NEEDED [isFreshKey] / addInputRequest, touch',
      // Cooperative cancel: targetless, so a self-loop.
      'task_active_working --> task_active_working : CANCEL [isFirstCancel] / markCancelRequested, abortRun, touch (internal)',
      'task_active_input_required --> task_cancelled : CANCEL / markCancelRequested, clearInputRequests, noteCancelled, touch',
      'task_active --> task_active : STATUS [isNewStatusMessage] / setStatusMessage, touch (internal)',
      'task_active --> task_cancelled : WORK_ABORTED [isCancelRequested] / clearInputRequests, noteCancelled, touch',
      'task_active --> task_failed : DEADLINE / recordError, clearInputRequests, touch',
    ]) {
      assert.ok(lines.has(line), `missing line: ${line}\n${mermaid}`);
    }
  });

  it('DOT: active is a cluster; edges leaving it are clipped at its border', () => {
    assert.ok(dot.includes('subgraph "cluster_task.active" {'));
    assert.ok(
      dot.includes(
        '"task.active" -> "task.completed" [label="WORK_DONE\\n/ recordResult, clearInputRequests, touch", ltail="cluster_task.active"];',
      ),
    );
    assert.ok(dot.includes('"task:initial" -> "task.active" [lhead="cluster_task.active"];'));
    assert.ok(
      dot.includes(
        '"task.active.working" -> "task.cancelled" [label="INPUT_NEEDED [isCancelRequested]\\n/ clearInputRequests, noteCancelled, touch"];',
      ),
    );
    assert.equal(dot.match(/shape=doublecircle/g)?.length, 3);
  });
});

describe('exporting a machine with every other shape', () => {
  checkExports(edgeCaseMachine);

  const mermaid = toMermaid(edgeCaseMachine);
  const lines = mermaid.split('\n').map((line) => line.trim());

  it('boxes the root when it has transitions of its own, drawn outside the box', () => {
    assert.equal(lines[1], '[*] --> edge');
    assert.ok(lines.includes('state "edge" as edge {'));
    assert.ok(lines.includes('edge --> edge_idle : RESET / log'));
    assert.ok(lines.includes('edge --> edge : PING / count (internal)'), 'the inline assign is left out');
  });

  it('parallel regions, deep history, after, always, onDone, onError, two targets, and/not guards', () => {
    const split = lines.indexOf('state "split" as edge_split {');
    assert.ok(split > 0);
    assert.equal(lines.slice(split).indexOf('--') > 0, true, 'regions separated by --');
    for (const line of [
      'state "H*" as edge_split_left_hist',
      'edge_idle --> edge_end : after 1000ms',
      'edge_my_state_2 --> edge_end : always [ready]',
      'edge_split --> edge_my_state : onDone',
      'edge_my_state --> edge_my_state_2 : onDone(job)',
      'edge_my_state --> edge_end : onError(job) / log',
      'edge_split --> edge_split_left_a2 : BOTH',
      'edge_split --> edge_split_right_b2 : BOTH',
      'edge_idle --> edge_split : GO [and(ready, not(blocked))]',
      'edge_idle --> edge_end : GO',
    ]) {
      assert.ok(lines.includes(line), `missing line: ${line}\n${mermaid}`);
    }
  });

  it('writes an edge inside a box only between direct children of that box (Mermaid re-parents states otherwise)', () => {
    const graph = describeMachine(edgeCaseMachine);
    const ids = new Map(graph.nodes.map((node) => [node.id.replace(/[^A-Za-z0-9_]/g, '_'), node]));
    ids.set(
      'edge_my_state_2',
      graph.nodes.find((node) => node.id === 'edge.my_state')!,
    );
    ids.set(
      'edge_my_state',
      graph.nodes.find((node) => node.id === 'edge.my-state')!,
    );
    const box: string[] = [];
    for (const line of lines.slice(1)) {
      const opened = /^state "[^"]*" as (\w+) \{$/.exec(line);
      if (opened) box.push(opened[1]!);
      else if (line === '}') box.pop();
      const edge = /^(\w+) --> (\w+) : /.exec(line);
      if (edge && box.length > 0) {
        const parent = ids.get(box.at(-1)!)!.id;
        assert.equal(ids.get(edge[1]!)!.parentId, parent, line);
        assert.equal(ids.get(edge[2]!)!.parentId, parent, line);
      }
    }
  });

  it('sanitises ids: keywords, dashes and collisions', () => {
    assert.ok(lines.includes('state "my-state" as edge_my_state'));
    assert.ok(lines.includes('state "my_state" as edge_my_state_2'));
    assert.ok(lines.includes('state "end" as edge_end'));
  });

  it('flags the inline guard, which the diagrams cannot name', () => {
    const inline = describeMachine(edgeCaseMachine).transitions.filter((edge) => edge.inlineGuard);
    assert.deepEqual(
      inline.map((edge) => `${edge.sourceId} ${edge.eventType}`),
      ['edge.idle GO'],
    );
  });

  it('DOT: parallel cluster dashed, history as H*, the root a cluster', () => {
    const dot = toDot(edgeCaseMachine);
    assert.ok(dot.includes('label="split (parallel)";'));
    assert.ok(dot.includes('"edge.split.left.hist" [label="H*", shape=circle];'));
    assert.ok(dot.includes('subgraph "cluster_edge" {'));
    assert.ok(dot.includes('"edge:start" -> "edge" [lhead="cluster_edge"];'));
    assert.ok(dot.includes('"edge" -> "edge" [label="PING\\n/ count (internal)"];'));
  });
});

describe('docs/machines.md', () => {
  it('holds, for every registered machine, the Mermaid diagram the code draws today (npm run docs:machines)', async () => {
    const docs = await readFile(join(REPO_ROOT, 'docs', 'machines.md'), 'utf8');
    for (const entry of MACHINES) {
      const block = extractGeneratedBlock(docs, entry.name);
      assert.ok(block !== undefined, `docs/machines.md has no generated block for ${entry.name}: run npm run docs:machines`);
      assert.equal(block, generatedBlock(entry), `docs/machines.md is out of date for ${entry.name}: run npm run docs:machines`);
    }
    assert.equal(updateMachineDocs(docs, MACHINES).text, docs);
  });

  it('updateMachineDocs rewrites a stale block and appends a section for a machine without one', () => {
    const task = findMachine('task')!;
    const extra: MachineEntry = { name: 'edge', machine: edgeCaseMachine, version: 1, description: 'Edge cases.' };
    const stale = '# Doc\n\n<!-- generated:task:start -->\n```mermaid\nold\n```\n<!-- generated:task:end -->\n\nAfter.\n';
    const { text, updated, added } = updateMachineDocs(stale, [task, extra]);
    assert.deepEqual(updated, ['task']);
    assert.deepEqual(added, ['edge']);
    assert.equal(extractGeneratedBlock(text, 'task'), generatedBlock(task));
    assert.equal(extractGeneratedBlock(text, 'edge'), generatedBlock(extra));
    assert.ok(text.includes('\n\nAfter.\n'));
    assert.match(generatedBlock(task), /^```mermaid\nstateDiagram-v2\n[\s\S]*\n```$/);
    assert.equal(updateMachineDocs(text, [task, extra]).text, text, 'idempotent');
  });
});

describe('taskvisor machines (in process)', () => {
  const run = async (args: string[], machines?: ReadonlyArray<MachineEntry>) => {
    let stdout = '';
    let stderr = '';
    const code = await machinesCommand(args, {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      ...(machines ? { machines } : {}),
    });
    return { code, stdout, stderr };
  };
  const two: MachineEntry[] = [findMachine('task')!, { name: 'edge', machine: edgeCaseMachine, version: 3, description: 'Edge cases.' }];

  it('stdout holds one valid document: one machine as its file; several as one JSON object or one DOT file', async () => {
    assert.equal((await run(['export', '--format', 'mermaid', '--machine', 'task'])).stdout, toMermaid(taskMachine));
    const dot = await run(['export', '--format', 'dot'], two);
    assert.match(dot.stdout, /^\/\/ machine: task \(version \d+\)\ndigraph "task" \{/);
    assert.match(dot.stdout, /\n\/\/ machine: edge \(version 3\)\ndigraph "edge" \{/);
    if (DOT_BINARY) renderWithDot(dot.stdout);
    const json = await run(['export', '--format', 'json', '--machine', 'edge'], two);
    assert.deepEqual(JSON.parse(json.stdout), toStatelyJson(edgeCaseMachine));
    const both = await run(['export', '--format', 'json'], two);
    assert.deepEqual(JSON.parse(both.stdout), { task: toStatelyJson(taskMachine), edge: toStatelyJson(edgeCaseMachine) });
  });

  it('Mermaid on stdout takes one machine: several are a usage error naming --machine and --out (a document holds one diagram)', async () => {
    const mermaid = await run(['export', '--format', 'mermaid'], two);
    assert.equal(mermaid.code, 2);
    assert.equal(mermaid.stdout, '');
    assert.match(
      mermaid.stderr,
      /a Mermaid document holds one diagram: choose one with --machine NAME \(task, edge\), or write them all with --out DIR/,
    );
    const chosen = await run(['export', '--format', 'mermaid', '--machine', 'edge'], two);
    assert.equal(chosen.code, 0);
    assert.equal(chosen.stdout, toMermaid(edgeCaseMachine));
    assert.equal(chosen.stdout.match(/^stateDiagram-v2$/gm)?.length, 1, 'one diagram');
  });

  it('list prints name, version and description', async () => {
    const { code, stdout } = await run(['list'], two);
    assert.equal(code, 0);
    const rows = stdout.trimEnd().split('\n');
    assert.match(rows[0]!, /^NAME +VERSION +DESCRIPTION$/);
    assert.match(rows[1]!, new RegExp(`^task +${TASK_MACHINE_VERSION} +Lifecycle`));
    assert.match(rows[2]!, /^edge +3 +Edge cases\.$/);
  });

  it('usage errors exit 2 and name the valid values', async () => {
    for (const [args, message] of [
      [['export', '--format', 'png'], /unknown format "png"; valid formats: json, mermaid, dot/],
      [['export'], /export needs --format; valid formats: json, mermaid, dot/],
      [['export', '--format', 'dot', '--machine', 'nope'], /unknown machine "nope"; valid machines: task/],
      [['export', '--format', 'dot', '--frmat'], /Unknown option '--frmat'/],
      [['draw'], /unknown subcommand "draw"; valid subcommands: list, export/],
      [[], /missing subcommand/],
    ] as const) {
      const { code, stdout, stderr } = await run([...args]);
      assert.equal(code, 2, args.join(' '));
      assert.equal(stdout, '');
      assert.match(stderr, message);
      assert.match(stderr, /Usage: taskvisor machines/);
    }
  });
});

describe('taskvisor machines (command line)', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'taskvisor-machines-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const cli = (args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [CLI, ...args], { cwd: dir, timeout: 30_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
    });

  it('export --format mermaid prints the diagram', async () => {
    const { code, stdout, stderr } = await cli(['machines', 'export', '--format', 'mermaid', '--machine', 'task']);
    assert.equal(code, 0, stderr);
    assert.equal(stdout, toMermaid(taskMachine));
    // Every registered machine is exported by default (the workflow executor too), as one JSON document.
    const all = await cli(['machines', 'export', '--format', 'json']);
    assert.equal(all.code, 0, all.stderr);
    assert.deepEqual(
      Object.keys(JSON.parse(all.stdout) as object),
      MACHINES.map((entry) => entry.name),
    );
  });

  it('export --out DIR creates DIR, writes <name>.<ext> and lists the paths on stderr', async () => {
    for (const [format, extension] of [
      ['mermaid', 'mmd'],
      ['dot', 'dot'],
      ['json', 'json'],
    ] as const) {
      const out = join(dir, 'exports', format);
      const { code, stdout, stderr } = await cli(['machines', 'export', '--format', format, '--out', out]);
      assert.equal(code, 0, stderr);
      assert.equal(stdout, '');
      const files = (await readdir(out)).sort();
      assert.deepEqual(files, MACHINES.map((entry) => `${entry.name}.${extension}`).sort());
      assert.deepEqual(stderr.trimEnd().split('\n').sort(), files.map((file) => join(out, file)).sort());
      const task = await readFile(join(out, `task.${extension}`), 'utf8');
      if (format === 'mermaid') assert.equal(task, toMermaid(taskMachine));
      if (format === 'dot') {
        assert.equal(task, toDot(taskMachine));
        if (DOT_BINARY) renderWithDot(task);
      }
      if (format === 'json') assert.deepEqual(JSON.parse(task), toStatelyJson(taskMachine));
    }
  });

  it('a bad format exits 2 naming the valid formats, and writes nothing', async () => {
    const { code, stdout, stderr } = await cli(['machines', 'export', '--format', 'svg', '--out', join(dir, 'never')]);
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.match(stderr, /unknown format "svg"; valid formats: json, mermaid, dot/);
    await assert.rejects(readdir(join(dir, 'never')), { code: 'ENOENT' });
  });

  it('list prints the registry', async () => {
    const { code, stdout, stderr } = await cli(['machines', 'list']);
    assert.equal(code, 0, stderr);
    for (const entry of MACHINES)
      assert.match(stdout, new RegExp(`^${entry.name} +${entry.version} +${escapeRegExp(entry.description)}$`, 'm'));
  });

  it('taskvisor help mentions the machines command', async () => {
    const { code, stdout } = await cli(['help']);
    assert.equal(code, 0);
    assert.match(stdout, /machines list\|export/);
  });
});
