/**
 * The workflow scenario suite: every `scenarios/*.yaml` file is one scenario
 * (in the spirit of muster's BDD files), run against a real server started
 * from a real config file (`serve`, Streamable HTTP on 127.0.0.1, port 0)
 * through the ext-tasks reference client.
 *
 * A scenario has `workflows` (file name → definition, written to the served
 * folder before start) and `steps`, each one action:
 *
 *   call:        { tool, args?, noTasks? }   with expect: { task: NAME } | { result: MATCH } | { error: { code, message? } }
 *   status:      { task, is, message? }       waits until tasks/get shows that status
 *   inputRequest:{ task, key, message? }      the task is input_required with that key
 *   respond:     { task, key, action, content? }   tasks/update
 *   cancel:      TASK                          tasks/cancel
 *   result:      { task, status, match? }     waits for the end; `match` against the result
 *   waitEvent:   LABEL                         waits until the fixture tools logged it
 *   events:      [LABEL…]                      the fixture tools' log, exactly (then cleared)
 *   writeWorkflow: { file, text }             (hot reload) written into the folder
 *   removeWorkflow: FILE
 *   tools:       { has?: [..], lacks?: [..], listChanged?: true }  waits for tools/list to show it
 *   reloadError: SUBSTRING                     the last reload reported this problem
 *   retryWithInput: { responses, expect }   MRTR: repeats the last call with inputResponses and its requestState
 *   schema:      { tool, match }             the tool's advertised inputSchema
 *   callTool:    alias of call
 *
 * MATCH is a subset match: objects match when every listed key matches,
 * arrays element by element, strings starting with `~` by substring.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { serve } from '../../src/cli/serve.js';
import type { WorkflowReloadReport } from '../../src/workflows/index.js';
import { connect, envelope, TASKS_CAPABILITIES, type ConnectedClient } from '../support/extTasksClient.js';
import { standardHeaders, sseMessages } from '../support/httpRaw.js';
import { tempDir, waitFor } from '../support/processes.js';
import { NO_TASKS_CAPABILITIES, taskOps, type Json } from '../support/taskOps.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const TOOLS = path.join(HERE, 'fixtures', 'tools.ts');
const WAIT = { timeoutMs: 15_000, intervalMs: 20 };

interface Scenario {
  name: string;
  workflows?: Record<string, unknown>;
  config?: Json;
  steps: Array<Record<string, unknown>>;
}

/** Subset match; returns a reason when `actual` does not match `expected`. */
function mismatch(actual: unknown, expected: unknown, at = '$'): string | undefined {
  if (typeof expected === 'string' && expected.startsWith('~')) {
    const text = typeof actual === 'string' ? actual : JSON.stringify(actual);
    return text?.includes(expected.slice(1))
      ? undefined
      : `${at}: ${JSON.stringify(actual)} does not contain ${JSON.stringify(expected.slice(1))}`;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length)
      return `${at}: expected ${expected.length} items, got ${JSON.stringify(actual)}`;
    for (const [i, item] of expected.entries()) {
      const reason = mismatch(actual[i], item, `${at}[${i}]`);
      if (reason) return reason;
    }
    return undefined;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object') return `${at}: expected an object, got ${JSON.stringify(actual)}`;
    for (const [key, value] of Object.entries(expected)) {
      if (value === null && !(key in (actual as Json))) continue;
      const reason = mismatch((actual as Json)[key], value, `${at}.${key}`);
      if (reason) return reason;
    }
    return undefined;
  }
  return actual === expected ? undefined : `${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
}

function assertMatch(actual: unknown, expected: unknown, what: string): void {
  const reason = mismatch(actual, expected);
  assert.equal(reason, undefined, `${what}: ${reason}\nactual: ${JSON.stringify(actual, null, 1)?.slice(0, 2000)}`);
}

/** Opens a listen stream for tool-list changes; `changed` resolves at the first `notifications/tools/list_changed`. */
async function listenForToolChanges(url: string): Promise<{ changed: Promise<void>; close: () => void }> {
  const abort = new AbortController();
  const params = { notifications: { toolsListChanged: true }, _meta: envelope(TASKS_CAPABILITIES) };
  const response = await fetch(url, {
    method: 'POST',
    headers: standardHeaders('subscriptions/listen', params),
    body: JSON.stringify({ jsonrpc: '2.0', id: 'listen-tools', method: 'subscriptions/listen', params }),
    signal: abort.signal,
  });
  let acked!: () => void;
  const ack = new Promise<void>((resolve) => (acked = resolve));
  const changed = (async () => {
    for await (const batch of sseMessages(response.body!)) {
      for (const message of batch) {
        if (message.method === 'notifications/tools/list_changed') return;
        if (message.method !== undefined) acked();
      }
    }
    throw new Error('the listen stream ended without notifications/tools/list_changed');
  })();
  changed.catch(() => {});
  // Changes made after the ack are seen (§1.9).
  await Promise.race([ack, changed]);
  return { changed, close: () => abort.abort() };
}

async function runScenario(scenario: Scenario): Promise<void> {
  const dir = await tempDir('taskvisor-wf-');
  const folder = path.join(dir.path, 'workflows');
  await (await import('node:fs/promises')).mkdir(folder);
  for (const [file, definition] of Object.entries(scenario.workflows ?? {})) {
    await writeFile(path.join(folder, file), typeof definition === 'string' ? definition : stringify(definition));
  }
  const configFile = path.join(dir.path, 'taskvisor.yaml');
  await writeFile(
    configFile,
    stringify({
      store: { kind: 'memory' },
      tasks: { pollIntervalMs: 20, promoteAfterMs: 100, reapIntervalMs: 0 },
      tools: [TOOLS],
      workflows: { dir: './workflows' },
      ...(scenario.config ?? {}),
    }),
  );
  const server = await serve({ config: configFile, http: '127.0.0.1:0', quiet: true });
  let reports: WorkflowReloadReport[] = [];
  server.workflows?.onReload((report) => reports.push(report));
  let client: ConnectedClient | undefined;
  let listening: Awaited<ReturnType<typeof listenForToolChanges>> | undefined;
  try {
    client = await connect({ kind: 'http', url: server.url! });
    const ops = taskOps(() => client!);
    const tasks = new Map<string, string>();
    const taskId = (name: unknown) => {
      const id = tasks.get(String(name));
      assert.ok(id, `no task saved as ${String(name)}`);
      return id;
    };
    const fixtureEvents = async () => {
      const outcome = await ops.call('events', {});
      assert.equal(outcome.kind, 'result', JSON.stringify(outcome));
      return ((outcome as { result: Json }).result.structuredContent as { events: string[] }).events;
    };
    await ops.call('events', { clear: true });
    let lastCall: { tool: string; args: Json; capabilities: Json; result: Json } | undefined;
    for (const [index, step] of scenario.steps.entries()) {
      const what = `step ${index + 1} (${Object.keys(step)[0]})`;
      if (step.call !== undefined || step.callTool !== undefined) {
        const call = (step.call ?? step.callTool) as { tool: string; args?: Json; noTasks?: boolean };
        const outcome = await ops.call(call.tool, call.args ?? {}, call.noTasks ? NO_TASKS_CAPABILITIES : TASKS_CAPABILITIES);
        const expect = (step.expect ?? {}) as { task?: string; result?: unknown; error?: { code: number; message?: string } };
        if (expect.error) {
          assert.equal(outcome.kind, 'error', `${what}: expected an error, got ${JSON.stringify(outcome)}`);
          const error = (outcome as { error: { code: number; message: string } }).error;
          assert.equal(error.code, expect.error.code, `${what}: ${JSON.stringify(error)}`);
          if (expect.error.message) assert.ok(error.message.includes(expect.error.message), `${what}: ${error.message}`);
          continue;
        }
        assert.equal(outcome.kind, 'result', `${what}: ${JSON.stringify(outcome)}`);
        const result = (outcome as { result: Json }).result;
        lastCall = {
          tool: call.tool,
          args: call.args ?? {},
          capabilities: call.noTasks ? NO_TASKS_CAPABILITIES : TASKS_CAPABILITIES,
          result,
        };
        if (expect.task !== undefined) {
          assert.equal(result.resultType, 'task', `${what}: expected a task, got ${JSON.stringify(result)}`);
          tasks.set(expect.task, String(result.taskId));
        } else {
          assert.notEqual(result.resultType, 'task', `${what}: expected a synchronous result, got a task`);
          if (expect.result !== undefined) assertMatch(result, expect.result, what);
        }
      } else if (step.retryWithInput !== undefined) {
        // MRTR: the same call again, with the answers and the requestState the server sent back.
        const want = step.retryWithInput as { responses: Json; expect: unknown };
        assert.ok(lastCall, `${what}: no earlier call`);
        const outcome = await ops.send(
          'tools/call',
          { name: lastCall.tool, arguments: lastCall.args, inputResponses: want.responses, requestState: lastCall.result.requestState },
          lastCall.capabilities,
        );
        assert.equal(outcome.kind, 'result', `${what}: ${JSON.stringify(outcome)}`);
        assertMatch((outcome as { result: Json }).result, want.expect, what);
      } else if (step.status !== undefined) {
        const want = step.status as { task: string; is: string; message?: string };
        const task = await waitFor(
          async () => {
            const current = await ops.task(taskId(want.task));
            return current.status === want.is && (!want.message || String(current.statusMessage ?? '').includes(want.message))
              ? current
              : undefined;
          },
          { ...WAIT, what: `${what}: task ${want.task} ${want.is}${want.message ? ` with "${want.message}"` : ''}` },
        );
        assert.ok(task);
      } else if (step.inputRequest !== undefined) {
        const want = step.inputRequest as { task: string; key: string; message?: string };
        const task = await waitFor(
          async () => {
            const current = await ops.task(taskId(want.task));
            return current.status === 'input_required' ? current : undefined;
          },
          { ...WAIT, what: `${what}: task ${want.task} input_required` },
        );
        const requests = task.inputRequests as Record<string, { method: string; params: Json }>;
        assert.ok(requests?.[want.key], `${what}: no input request ${want.key} in ${JSON.stringify(requests)}`);
        assert.equal(requests[want.key]!.method, 'elicitation/create');
        if (want.message)
          assert.ok(String(requests[want.key]!.params.message).includes(want.message), `${what}: ${JSON.stringify(requests[want.key])}`);
      } else if (step.respond !== undefined) {
        const answer = step.respond as { task: string; key: string; action: string; content?: Json };
        const outcome = await ops.update(taskId(answer.task), {
          [answer.key]: { action: answer.action, ...(answer.content ? { content: answer.content } : {}) },
        });
        assert.equal(outcome.kind, 'result', `${what}: ${JSON.stringify(outcome)}`);
      } else if (step.cancel !== undefined) {
        const outcome = await ops.cancel(taskId(step.cancel));
        assert.equal(outcome.kind, 'result', `${what}: ${JSON.stringify(outcome)}`);
      } else if (step.result !== undefined) {
        const want = step.result as { task: string; status: string; match?: unknown; error?: unknown };
        const task = await waitFor(
          async () => {
            const current = await ops.task(taskId(want.task));
            return ['completed', 'failed', 'cancelled'].includes(String(current.status)) ? current : undefined;
          },
          { ...WAIT, what: `${what}: task ${want.task} to finish` },
        );
        assert.equal(task.status, want.status, `${what}: ${JSON.stringify(task)}`);
        if (want.status === 'completed') assert.equal((task.result as Json).resultType, 'complete');
        if (want.match !== undefined) assertMatch(task.result, want.match, what);
        if (want.error !== undefined) assertMatch(task.error, want.error, what);
      } else if (step.waitEvent !== undefined) {
        await waitFor(async () => (await fixtureEvents()).includes(String(step.waitEvent)), {
          ...WAIT,
          what: `${what}: event ${String(step.waitEvent)}`,
        });
      } else if (step.events !== undefined) {
        const events = await fixtureEvents();
        assert.deepEqual(events, step.events, what);
        await ops.call('events', { clear: true });
      } else if (step.writeWorkflow !== undefined || step.removeWorkflow !== undefined) {
        listening ??= await listenForToolChanges(server.url!);
        reports = [];
        if (step.writeWorkflow !== undefined) {
          const { file, text } = step.writeWorkflow as { file: string; text: unknown };
          await writeFile(path.join(folder, file), typeof text === 'string' ? text : stringify(text));
        } else {
          await rm(path.join(folder, String(step.removeWorkflow)));
        }
        await waitFor(() => reports.length > 0, { ...WAIT, what: `${what}: a reload` });
      } else if (step.tools !== undefined) {
        const want = step.tools as { has?: string[]; lacks?: string[]; listChanged?: boolean };
        if (want.listChanged) {
          assert.ok(listening, `${what}: no listen stream open (write a workflow first)`);
          await listening.changed;
          listening.close();
          listening = undefined;
        }
        const names = (await client.client.listTools()).tools.map((tool) => tool.name);
        for (const name of want.has ?? []) assert.ok(names.includes(name), `${what}: ${name} not in ${names.join(', ')}`);
        for (const name of want.lacks ?? []) assert.ok(!names.includes(name), `${what}: ${name} still in ${names.join(', ')}`);
      } else if (step.reloadError !== undefined) {
        const errors = reports.flatMap((report) => report.errors).join('\n');
        assert.ok(errors.includes(String(step.reloadError)), `${what}: reload errors were:\n${errors}`);
      } else if (step.schema !== undefined) {
        const want = step.schema as { tool: string; match: unknown };
        const tool = (await client.client.listTools()).tools.find((entry) => entry.name === want.tool);
        assert.ok(tool, `${what}: no tool ${want.tool}`);
        assertMatch(tool.inputSchema, want.match, what);
      } else {
        assert.fail(`${what}: unknown scenario step ${JSON.stringify(step)}`);
      }
    }
  } finally {
    listening?.close();
    await client?.close();
    await server.stop();
    await dir.remove();
  }
}

const files = (await readdir(path.join(HERE, 'scenarios'))).filter((file) => file.endsWith('.yaml')).sort();

describe('workflow scenarios (real server over HTTP, ext-tasks client)', () => {
  for (const file of files) {
    const scenarioPromise = readFile(path.join(HERE, 'scenarios', file), 'utf8').then((text) => parse(text) as Scenario);
    it(file.replace(/\.yaml$/, ''), async () => runScenario(await scenarioPromise));
  }
});
