/**
 * The end-to-end conformance scenarios (SEP-2663, protocol 2026-07-28), run
 * against a real server over a real transport with the official
 * `@modelcontextprotocol/ext-tasks` client. `http.integration.test.ts` and
 * `stdio.integration.test.ts` register them with their own `startServer()`.
 *
 * Rule ids (T-xx, D-xx, I-x, P-x) refer to
 * /work/shared/reference/tasks-spec-2026-07-28.md and sdk-v2-notes.md.
 * Every response the server sends is validated with the ext-tasks V2 zod
 * schemas after each test (test/support/wireChecks.ts).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import {
  resultFromTaskOutcome,
  TaskFailedError,
  type ApplicationInputRequest,
  type ResolvedInputExchangeContext,
} from '@modelcontextprotocol/ext-tasks/client';
import {
  CallToolResultV2Schema,
  CreateTaskResultV2Schema,
  GetTaskResultV2Schema,
  TaskStatusNotificationV2Schema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import { connect, envelope, taskSession, type ConnectedClient, type Endpoint } from '../support/extTasksClient.js';
import { error_, NO_TASKS_CAPABILITIES, result_, sleepMs, taskOps, textOf, unknownTaskId, type Json } from '../support/taskOps.js';
import { wireChecker } from '../support/wireChecks.js';

export const TASKS_EXTENSION_ID = 'io.modelcontextprotocol/tasks';
const TASK_ID = /^[a-f0-9]{32}$/;
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** A running e2e server: where to connect, and how to stop it. */
export interface E2eServer {
  endpoint: Endpoint;
  close(): Promise<void>;
}

export interface ScenarioContext {
  /** The connected client the scenarios use (valid inside tests); a plain function, destructured by callers. */
  connected: () => ConnectedClient;
  /** Raw task operations on that client. */
  ops: ReturnType<typeof taskOps>;
  /** Counts of the server messages the V2 schema checks have seen so far. */
  wireCounts: Record<string, number>;
}

/**
 * Registers the shared scenarios under `describe(label)`. `extra` may
 * register transport-specific tests inside the same suite (same server,
 * same connection, same wire checks).
 */
export function registerScenarios(label: string, startServer: () => Promise<E2eServer>, extra?: (context: ScenarioContext) => void): void {
  describe(`${label}: MCP Tasks extension conformance (ext-tasks client)`, () => {
    let server: E2eServer | undefined;
    let client: ConnectedClient | undefined;
    const connected = () => {
      if (!client) throw new Error('not connected');
      return client;
    };
    const wire = wireChecker(() => client);
    const ops = taskOps(connected);

    before(async () => {
      server = await startServer();
      client = await connect(server.endpoint);
      // Wait until the server answers (a stdio child boots in ~2 s) so no test pays for the start-up.
      await client.raw({ method: 'server/discover', params: { _meta: envelope() } } as never);
    });
    after(async () => {
      await client?.close();
      await server?.close();
    });
    // Every response of every test goes through the ext-tasks V2 schemas.
    afterEach(() => wire.check());

    describe('synchronous baseline (T-01, T-02, T-03)', () => {
      it('T-01: tools/call whose _meta lacks the extension gets a plain CallToolResult, never a task', async () => {
        // `sleep` 250 ms runs past the promotion threshold: with the extension it would be a task.
        const variants = [
          NO_TASKS_CAPABILITIES,
          { ...NO_TASKS_CAPABILITIES, extensions: {} },
          { ...NO_TASKS_CAPABILITIES, extensions: { 'example.com/other': {} } },
          // T-37: the legacy 2025-11-25 capability does not count as declaring the extension.
          { ...NO_TASKS_CAPABILITIES, tasks: { requests: { tools: { call: {} } } } },
        ];
        const responses = await Promise.all(variants.map((capabilities) => ops.call('sleep', { ms: 250 }, capabilities)));
        for (const response of responses) {
          const result = result_(response, 'tools/call sleep');
          assert.equal(result.resultType, 'complete', JSON.stringify(result));
          assert.equal(textOf(result), 'Slept for 250 ms');
          assert.ok(!('taskId' in result), 'a plain CallToolResult has no taskId');
          assert.ok(CallToolResultV2Schema.safeParse(result).success);
        }
      });

      it('T-36: the legacy `task` param on tools/call is ignored, not an opt-in (nor a ttl request)', async () => {
        const legacy = { name: 'sleep', arguments: { ms: 250 }, task: { ttl: 1000 } };
        const [plain, created] = await Promise.all([ops.send('tools/call', legacy, NO_TASKS_CAPABILITIES), ops.send('tools/call', legacy)]);
        assert.equal(result_(plain).resultType, 'complete');
        const task = result_(created);
        assert.equal(task.resultType, 'task');
        assert.equal(task.ttlMs, 3_600_000, 'the legacy ttl is not honoured');
        await ops.waitForStatus(String(task.taskId), 'completed');
      });

      it('unknown tools and invalid arguments are -32602 whether or not the extension is declared', async () => {
        for (const capabilities of [NO_TASKS_CAPABILITIES, undefined]) {
          error_(await ops.call('no_such_tool', {}, capabilities), -32602, 'unknown tool');
          error_(await ops.call('sleep', { ms: 'soon' }, capabilities), -32602, 'invalid arguments');
        }
      });

      it('T-01: a declaration on an earlier request does not carry over to the next one', async () => {
        const task = await ops.createTask('sleep', { ms: 250 });
        const plain = result_(await ops.call('sleep', { ms: 250 }, NO_TASKS_CAPABILITIES));
        assert.equal(plain.resultType, 'complete');
        await ops.waitForStatus(task.taskId, 'completed');
      });

      it('T-02: an auto tool that finishes quickly is synchronous even WITH the capability', async () => {
        const result = result_(await ops.call('sleep', { ms: 5 }), 'tools/call sleep 5');
        assert.equal(result.resultType, 'complete');
        assert.equal(textOf(result), 'Slept for 5 ms');
        assert.ok(!('taskId' in result));
      });

      it("T-02: a taskBehavior 'never' tool is synchronous with the capability, even when slow", async () => {
        const result = result_(await ops.call('never_task', { ms: 300 }), 'tools/call never_task');
        assert.equal(result.resultType, 'complete');
        assert.equal(textOf(result), 'never done');
        const echo = result_(await ops.call('echo', { text: 'hi' }), 'tools/call echo');
        assert.equal(textOf(echo), 'hi');
      });

      it("T-03: a taskBehavior 'always' tool without the capability is -32021 naming the extension", async () => {
        const error = error_(await ops.call('always_task', {}, NO_TASKS_CAPABILITIES), -32021, 'always_task without the extension');
        assert.deepEqual((error.data as Json | undefined)?.requiredCapabilities, { extensions: { [TASKS_EXTENSION_ID]: {} } });
      });

      it("T-02: a taskBehavior 'always' tool with the capability is a task even when it is instant", async () => {
        const created = await ops.createTask('always_task', { ms: 0 });
        const { task } = await ops.waitForStatus(created.taskId, 'completed');
        assert.equal(textOf(task.result), 'always done');
      });

      it('T-08/§4.4: hello_world without the extension is answered by MRTR input_required, then completes on the retry', async () => {
        const first = result_(await ops.call('hello_world', {}, NO_TASKS_CAPABILITIES), 'tools/call hello_world');
        assert.equal(first.resultType, 'input_required', JSON.stringify(first));
        assert.deepEqual(Object.keys(first.inputRequests as Json), ['name']);
        assert.equal(typeof first.requestState, 'string');
        assert.ok(!('taskId' in first));
        const retry = result_(
          await ops.send(
            'tools/call',
            {
              name: 'hello_world',
              arguments: {},
              inputResponses: { name: { action: 'accept', content: { name: 'Luca' } } },
              requestState: first.requestState,
            },
            NO_TASKS_CAPABILITIES,
          ),
          'MRTR retry',
        );
        assert.equal(retry.resultType, 'complete');
        assert.equal(textOf(retry), 'Hello, Luca!');
      });

      it('T-19: a tool that needs elicitation from a client that did not declare it gets -32021, never an elicitation request', async () => {
        const error = error_(
          await ops.call('hello_world', {}, { extensions: { [TASKS_EXTENSION_ID]: {} } }),
          -32021,
          'hello_world without elicitation',
        );
        assert.ok((error.data as Json | undefined)?.requiredCapabilities, JSON.stringify(error));
      });

      it('I-5: a synchronous call whose tool raises a JSON-RPC error answers that error; isError results stay results', async () => {
        const error = error_(await ops.call('fail', { code: -32000, message: 'sync boom' }, NO_TASKS_CAPABILITIES), -32000);
        assert.equal(error.message, 'sync boom');
        const result = result_(await ops.call('tool_error', { message: 'bad' }));
        assert.equal(result.resultType, 'complete');
        assert.equal(result.isError, true);
        assert.equal(textOf(result), 'bad');
      });
    });

    describe('CreateTaskResult (T-05, T-07, T-09, §1.3, P1)', () => {
      it('T-05/T-09/§1.3: resultType "task", flat Task fields, ttlMs, no content/inputRequests/result/error, 32-hex id', async () => {
        const created = await ops.createTask('sleep', { ms: 300 });
        assert.ok(CreateTaskResultV2Schema.safeParse(created).success);
        assert.equal(created.resultType, 'task');
        assert.match(created.taskId, TASK_ID);
        assert.ok(['working', 'input_required'].includes(String(created.status)));
        assert.match(String(created.createdAt), ISO_8601);
        assert.match(String(created.lastUpdatedAt), ISO_8601);
        assert.ok('ttlMs' in created, 'ttlMs must be present (null = unlimited)');
        assert.equal(created.ttlMs, 3_600_000);
        assert.equal(created.pollIntervalMs, 50);
        for (const key of ['content', 'inputRequests', 'result', 'error', 'task', 'structuredContent', 'isError']) {
          assert.ok(!(key in created), `CreateTaskResult must not carry ${key}: ${JSON.stringify(created)}`);
        }
        // T-07: durably stored before the answer left — an immediate tasks/get succeeds.
        const task = await ops.task(created.taskId);
        assert.equal(task.taskId, created.taskId);
        assert.equal(task.createdAt, created.createdAt);
        await ops.waitForStatus(created.taskId, 'completed');
      });

      it('§1.3: a task created waiting for input still carries no inputRequests in its CreateTaskResult', async () => {
        const created = await ops.createTask('hello_world');
        assert.ok(!('inputRequests' in created), JSON.stringify(created));
        await ops.cancel(created.taskId);
      });

      it('T-26/§1.2: a tool with ttlMs null creates tasks whose ttlMs key is present and null', async () => {
        const created = await ops.createTask('unlimited_task');
        assert.ok('ttlMs' in created);
        assert.equal(created.ttlMs, null);
        const { task } = await ops.waitForStatus(created.taskId, 'completed');
        assert.equal(task.ttlMs, null);
      });

      it('T-09: task ids are distinct 128-bit lowercase hex strings', async () => {
        const ids = new Set<string>();
        for (let i = 0; i < 5; i++) {
          const created = await ops.createTask('always_task', { ms: 0 });
          assert.match(created.taskId, TASK_ID);
          ids.add(created.taskId);
        }
        assert.equal(ids.size, 5);
      });
    });

    describe('working → completed (D-04, T-06, T-12)', () => {
      it('ext-tasks session: callTool("sleep") → settle() → resultFromTaskOutcome', async () => {
        const session = taskSession(connected());
        try {
          const execution = await session.callTool('sleep', { ms: 400 });
          assert.equal(execution.kind, 'task');
          const { outcome } = await execution.settle();
          assert.equal(outcome.status, 'completed');
          const result = resultFromTaskOutcome(outcome) as Json;
          assert.equal(result.resultType, 'complete');
          assert.equal(textOf(result), 'Slept for 400 ms');
        } finally {
          await session.close();
        }
      });

      it('raw tasks/get polling shows working, then completed with result.resultType "complete"', async () => {
        const created = await ops.createTask('sleep', { ms: 400, message: 'woke up' });
        const first = await ops.task(created.taskId);
        assert.equal(first.resultType, 'complete', 'T-06: tasks/get answers resultType "complete", never "task"');
        assert.equal(first.status, 'working');
        assert.equal(first.statusMessage, 'Sleeping for 400 ms');
        const { task, seen } = await ops.waitForStatus(created.taskId, 'completed');
        assert.deepEqual(seen, ['working', 'completed']);
        assert.ok(GetTaskResultV2Schema.safeParse(task).success);
        const result = task.result as Json;
        assert.equal(result.resultType, 'complete', 'D-04: the nested CallToolResult carries resultType "complete"');
        assert.equal(textOf(result), 'woke up');
        assert.ok(CallToolResultV2Schema.safeParse(result).success);
        assert.ok(Date.parse(String(task.lastUpdatedAt)) >= Date.parse(String(task.createdAt)));
        assert.equal(task.createdAt, created.createdAt);
      });

      it('T-32: progress is reported through statusMessage, and no progress/log notification is sent for a task', async () => {
        const created = await ops.createTask('progress');
        const messages: string[] = [];
        await ops.pollUntil(created.taskId, (task) => {
          if (task.status === 'working' && messages.at(-1) !== task.statusMessage) messages.push(String(task.statusMessage));
          return task.status === 'completed';
        });
        assert.deepEqual(messages, ['step 1', 'step 2']);
        const stray = connected().received.filter((message) =>
          ['notifications/progress', 'notifications/message'].includes(String((message as Json).method)),
        );
        assert.deepEqual(stray, []);
      });

      it('ext-tasks session: an instant tool comes back as an immediate execution', async () => {
        const session = taskSession(connected());
        try {
          const execution = await session.callTool('echo', { text: 'now' });
          assert.equal(execution.kind, 'immediate');
          const result = resultFromTaskOutcome((await execution.settle()).outcome) as Json;
          assert.equal(textOf(result), 'now');
        } finally {
          await session.close();
        }
      });
    });

    describe('input_required and tasks/update (T-12, T-13, T-18, T-20, T-22)', () => {
      it('hello_world over raw requests: stable inputRequests, ignored stray/repeated updates, "Hello, Luca!"', async () => {
        const created = await ops.createTask('hello_world');
        const { task: polled1 } = await ops.waitForStatus(created.taskId, 'input_required');
        const polled2 = await ops.task(created.taskId);
        // T-13: an unanswered request is repeated with the same key and the same content on every poll.
        assert.deepEqual(Object.keys(polled1.inputRequests as Json), ['name']);
        assert.deepEqual(polled2.inputRequests, polled1.inputRequests);
        const request = (polled1.inputRequests as Record<string, Json>).name!;
        assert.equal(request.method, 'elicitation/create');
        assert.equal((request.params as Json).mode, 'form');
        assert.deepEqual(((request.params as Json).requestedSchema as Json).required, ['name']);
        assert.ok(!('id' in request) && !('jsonrpc' in request), '§1.6: entries are {method, params} only');

        // T-22/T-18: a key never issued is ignored; the task still waits for `name`.
        const stray = result_(await ops.update(created.taskId, { bogus: { action: 'accept', content: { name: 'Mallory' } } }));
        assert.equal(stray.resultType, 'complete');
        const still = await ops.task(created.taskId);
        assert.equal(still.status, 'input_required');
        assert.deepEqual(still.inputRequests, polled1.inputRequests);

        // T-20: the answer is acknowledged with {resultType: "complete"}.
        const ack = result_(await ops.update(created.taskId, { name: { action: 'accept', content: { name: 'Luca' } } }));
        assert.equal(ack.resultType, 'complete');
        // T-22: the same key again (already answered) is ignored, before and after the task ends.
        const repeated = result_(await ops.update(created.taskId, { name: { action: 'accept', content: { name: 'Mallory' } } }));
        assert.equal(repeated.resultType, 'complete');

        const { task } = await ops.waitForStatus(created.taskId, 'completed');
        assert.ok(!('inputRequests' in task));
        assert.equal(textOf(task.result), 'Hello, Luca!');
        assert.equal(polled1.statusMessage, 'Waiting for a name');
        assert.ok(!('statusMessage' in task), `a completed task does not keep its working-phase message: ${String(task.statusMessage)}`);
        const late = result_(await ops.update(created.taskId, { name: { action: 'accept', content: { name: 'Eve' } } }));
        assert.equal(late.resultType, 'complete');
        const final = await ops.task(created.taskId);
        assert.equal(final.status, 'completed');
        assert.equal(textOf(final.result), 'Hello, Luca!');
      });

      it('hello_world through the ext-tasks session with onInputRequest', async () => {
        const asked: Array<{ request: ApplicationInputRequest; context: ResolvedInputExchangeContext }> = [];
        const session = taskSession(connected(), async (request, context) => {
          asked.push({ request, context });
          return { action: 'accept', content: { name: 'Luca' } } as never;
        });
        try {
          const execution = await session.callTool('hello_world', {});
          assert.equal(execution.kind, 'task');
          const result = resultFromTaskOutcome((await execution.settle()).outcome) as Json;
          assert.equal(result.resultType, 'complete');
          assert.equal(textOf(result), 'Hello, Luca!');
        } finally {
          await session.close();
        }
        assert.equal(asked.length, 1, 'the client asks the user once per key');
        assert.equal(asked[0]!.request.kind, 'elicitation');
        assert.equal(asked[0]!.context.scope, 'task');
        assert.equal(asked[0]!.context.delivery, 'task-update');
        assert.equal(asked[0]!.context.inputId, 'name');
      });

      it('T-20/§1.6: malformed tasks/update requests are -32602 and the task keeps waiting', async () => {
        const created = await ops.createTask('hello_world');
        const { task: waiting } = await ops.waitForStatus(created.taskId, 'input_required');
        error_(await ops.send('tasks/update', { taskId: created.taskId }), -32602, 'tasks/update without inputResponses');
        error_(
          await ops.update(created.taskId, { name: { action: 'accept', content: { name: { nested: 1 } } } }),
          -32602,
          'tasks/update with a malformed answer',
        );
        error_(
          await ops.update(created.taskId, {
            name: { method: 'elicitation/create', result: { action: 'accept', content: { name: 'Luca' } } },
          }),
          -32602,
          'tasks/update with a {method, result} wrapper (P2)',
        );
        const still = await ops.task(created.taskId);
        assert.equal(still.status, 'input_required');
        assert.deepEqual(still.inputRequests, waiting.inputRequests);
        // A decline is a valid answer: the tool reports it as an isError result, the task completes (T-16).
        result_(await ops.update(created.taskId, { name: { action: 'decline' } }));
        const { task } = await ops.waitForStatus(created.taskId, 'completed');
        assert.equal((task.result as Json).isError, true);
        assert.equal(textOf(task.result), 'No name given (decline).');
      });

      it('T-08: through the ext-tasks session, a never-task tool that elicits goes MRTR (request-retry), not a task', async () => {
        const asked: ResolvedInputExchangeContext[] = [];
        const session = taskSession(connected(), async (_request, context) => {
          asked.push(context);
          return { action: 'accept', content: { name: 'Luca' } } as never;
        });
        try {
          const execution = await session.callTool('never_ask', {});
          assert.equal(execution.kind, 'immediate');
          const result = resultFromTaskOutcome((await execution.settle()).outcome) as Json;
          assert.equal(textOf(result), 'Hi, Luca!');
        } finally {
          await session.close();
        }
        assert.equal(asked.length, 1);
        assert.equal(asked[0]!.scope, 'request');
        assert.equal(asked[0]!.delivery, 'request-retry');
      });

      it('two_inputs (sequential): distinct keys; an answer to a key not yet issued is ignored (T-18, T-22)', async () => {
        const created = await ops.createTask('two_inputs');
        const { task: first } = await ops.waitForStatus(created.taskId, 'input_required');
        assert.deepEqual(Object.keys(first.inputRequests as Json), ['first']);
        // `second` has not been issued: ignored, and not remembered for later.
        result_(await ops.update(created.taskId, { second: { action: 'accept', content: { value: 'EARLY' } } }));
        const still = await ops.task(created.taskId);
        assert.equal(still.status, 'input_required');
        assert.deepEqual(Object.keys(still.inputRequests as Json), ['first']);

        result_(await ops.update(created.taskId, { first: { action: 'accept', content: { value: 'A' } } }));
        const { task: second } = await ops.pollUntil(
          created.taskId,
          (task) => task.status === 'input_required' && Object.hasOwn(task.inputRequests as Json, 'second'),
        );
        assert.deepEqual(Object.keys(second.inputRequests as Json), ['second'], 'the answered key is gone, the new key is distinct');
        result_(await ops.update(created.taskId, { second: { action: 'accept', content: { value: 'B' } } }));
        const { task } = await ops.waitForStatus(created.taskId, 'completed');
        assert.equal(textOf(task.result), 'A+B');
      });

      it('two_inputs (parallel): a partial answer keeps the task input_required with the rest outstanding (T-22)', async () => {
        const created = await ops.createTask('two_inputs', { parallel: true });
        const { task: both } = await ops.pollUntil(
          created.taskId,
          (task) => task.status === 'input_required' && Object.keys(task.inputRequests as Json).length === 2,
        );
        assert.deepEqual(Object.keys(both.inputRequests as Json).sort(), ['first', 'second']);
        // One outstanding key plus one never issued: the first is taken, the other ignored (T-22).
        result_(
          await ops.update(created.taskId, {
            first: { action: 'accept', content: { value: 'A' } },
            third: { action: 'accept', content: { value: 'Z' } },
          }),
        );
        // The partial answer is eventually consistent (T-20): wait for it to land, then check it stays put.
        const { task: partial } = await ops.pollUntil(
          created.taskId,
          (task) => !Object.hasOwn((task.inputRequests as Json) ?? {}, 'first'),
        );
        assert.equal(partial.status, 'input_required');
        assert.deepEqual(Object.keys(partial.inputRequests as Json), ['second']);
        await sleepMs(60);
        const later = await ops.task(created.taskId);
        assert.equal(later.status, 'input_required');
        assert.deepEqual(later.inputRequests, partial.inputRequests);
        result_(await ops.update(created.taskId, { second: { action: 'accept', content: { value: 'B' } } }));
        const { task } = await ops.waitForStatus(created.taskId, 'completed');
        assert.equal(textOf(task.result), 'A+B');
      });

      it('two_inputs through the ext-tasks session: onInputRequest sees two distinct input ids', async () => {
        const ids: Array<string | undefined> = [];
        const session = taskSession(connected(), async (_request, context) => {
          ids.push(context.inputId);
          return { action: 'accept', content: { value: context.inputId === 'first' ? 'X' : 'Y' } } as never;
        });
        try {
          const execution = await session.callTool('two_inputs', {});
          const result = resultFromTaskOutcome((await execution.settle()).outcome) as Json;
          assert.equal(textOf(result), 'X+Y');
        } finally {
          await session.close();
        }
        assert.deepEqual(ids, ['first', 'second']);
      });
    });

    describe('cancellation (T-23, T-24, T-28)', () => {
      it('T-23: tasks/cancel on a blocking task acknowledges {resultType:"complete"}, then the task is cancelled', async () => {
        const created = await ops.createTask('blocking');
        assert.equal((await ops.task(created.taskId)).status, 'working');
        const ack = result_(await ops.cancel(created.taskId));
        assert.equal(ack.resultType, 'complete');
        assert.deepEqual(
          Object.keys(ack).filter((key) => key !== '_meta'),
          ['resultType'],
          'an acknowledgement only, no Task (§1.7)',
        );
        const { task } = await ops.waitForStatus(created.taskId, 'cancelled');
        for (const key of ['inputRequests', 'result', 'error']) assert.ok(!(key in task));
        // Cancelling again changes nothing (T-28).
        result_(await ops.cancel(created.taskId));
        assert.equal((await ops.task(created.taskId)).status, 'cancelled');
      });

      it('T-24: a task waiting for input is cancelled by tasks/cancel', async () => {
        const created = await ops.createTask('hello_world');
        await ops.waitForStatus(created.taskId, 'input_required');
        result_(await ops.cancel(created.taskId));
        await ops.waitForStatus(created.taskId, 'cancelled');
        // An answer after the cancel is ignored.
        result_(await ops.update(created.taskId, { name: { action: 'accept', content: { name: 'Luca' } } }));
        assert.equal((await ops.task(created.taskId)).status, 'cancelled');
      });

      it('T-28: tasks/cancel (and tasks/update) on a completed task is acknowledged and leaves it completed', async () => {
        const created = await ops.createTask('always_task', { ms: 0 });
        const { task: done } = await ops.waitForStatus(created.taskId, 'completed');
        const ack = result_(await ops.cancel(created.taskId));
        assert.equal(ack.resultType, 'complete');
        result_(await ops.update(created.taskId, { anything: { action: 'cancel' } }));
        await sleepMs(50);
        const after = await ops.task(created.taskId);
        assert.equal(after.status, 'completed');
        assert.deepEqual(after.result, done.result);
        assert.equal(after.lastUpdatedAt, done.lastUpdatedAt);
      });

      it('T-24: cancellation is cooperative — a tool that ignores the signal may still end completed', async () => {
        const created = await ops.createTask('stubborn');
        result_(await ops.cancel(created.taskId));
        const { task } = await ops.pollUntil(created.taskId, (task) => ['completed', 'cancelled', 'failed'].includes(String(task.status)));
        assert.equal(task.status, 'completed');
        assert.equal(textOf(task.result), 'stubborn finished anyway');
      });

      it('T-25: notifications/cancelled for the original tools/call does not cancel the task', async () => {
        const created = await ops.createTask('blocking');
        const call = connected().exchanges.findLast((exchange) => exchange.method === 'tools/call');
        assert.ok(call);
        await connected().transport.send({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: call.id, reason: 'the client lost interest', _meta: envelope() },
        } as never);
        await sleepMs(100);
        assert.equal((await ops.task(created.taskId)).status, 'working');
        result_(await ops.cancel(created.taskId));
        await ops.waitForStatus(created.taskId, 'cancelled');
      });

      it('T-28: a failed task stays failed after tasks/cancel', async () => {
        const created = await ops.createTask('slow_fail');
        const { task: failed } = await ops.waitForStatus(created.taskId, 'failed');
        result_(await ops.cancel(created.taskId));
        const after = await ops.task(created.taskId);
        assert.equal(after.status, 'failed');
        assert.deepEqual(after.error, failed.error);
      });

      it('ext-tasks session: execution.cancel() ends the task cancelled', async () => {
        const session = taskSession(connected());
        let taskId: string | undefined;
        try {
          const execution = await session.callTool('blocking', {});
          assert.equal(execution.kind, 'task');
          taskId = execution.handle?.taskId;
          await execution.cancel();
          const { outcome } = await execution.settle();
          assert.equal(outcome.status, 'cancelled');
        } finally {
          await session.close();
        }
        assert.ok(taskId);
        await ops.waitForStatus(taskId, 'cancelled');
      });
    });

    describe('failed vs completed-with-isError (T-15, T-16, I-5)', () => {
      it('T-15: a tool raising ToolError(-32000, "boom") ends failed with error {code:-32000, message:"boom"}', async () => {
        const created = await ops.createTask('slow_fail');
        const { task, seen } = await ops.waitForStatus(created.taskId, 'failed');
        assert.deepEqual(seen, ['working', 'failed']);
        assert.deepEqual(task.error, { code: -32000, message: 'boom' });
        assert.equal(typeof task.statusMessage, 'string', 'T-15 SHOULD: a diagnostic statusMessage');
        assert.ok(!('result' in task));
      });

      it('T-15: the ext-tasks session reports the failure with its JSON-RPC code', async () => {
        const session = taskSession(connected());
        try {
          const execution = await session.callTool('slow_fail', {});
          assert.equal(execution.kind, 'task');
          const { outcome } = await execution.settle();
          assert.equal(outcome.status, 'failed');
          if (outcome.status !== 'failed') return;
          assert.ok(outcome.error instanceof TaskFailedError);
          assert.equal(outcome.error.code, -32000);
          assert.match(outcome.error.message, /boom/);
        } finally {
          await session.close();
        }
      });

      it('T-34: a tool throwing a plain Error ends failed with -32603 and an informative message', async () => {
        const created = await ops.createTask('slow_throw');
        const { task } = await ops.waitForStatus(created.taskId, 'failed');
        const error = task.error as Json;
        assert.equal(error.code, -32603);
        assert.match(String(error.message), /kaput/);
      });

      it('T-16/I-5: a tool result with isError:true ends the task completed with that result', async () => {
        const created = await ops.createTask('slow_tool_error');
        const { task } = await ops.waitForStatus(created.taskId, 'completed');
        const result = task.result as Json;
        assert.equal(result.isError, true);
        assert.equal(result.resultType, 'complete');
        assert.equal(textOf(result), 'the tool reports an error');
        assert.ok(!('error' in task));
      });

      it('T-16/I-5: demo tool_error is completed with isError:true, also through the ext-tasks session', async () => {
        const session = taskSession(connected());
        try {
          const execution = await session.callTool('tool_error', { message: 'nope' });
          const { outcome } = await execution.settle();
          assert.equal(outcome.status, 'completed');
          const result = resultFromTaskOutcome(outcome) as Json;
          assert.equal(result.isError, true);
          assert.equal(textOf(result), 'nope');
        } finally {
          await session.close();
        }
      });
    });

    describe('the demo shows every outcome', () => {
      it('demo fail and tool_error with ms become tasks ending failed, and completed with isError', async () => {
        const failing = await ops.createTask('fail', { code: -32000, message: 'late boom', ms: 400 });
        const answering = await ops.createTask('tool_error', { message: 'late error', ms: 400 });
        const { task: failed } = await ops.waitForStatus(failing.taskId, 'failed', 30_000);
        assert.deepEqual(
          { code: (failed.error as Json).code, message: (failed.error as Json).message },
          { code: -32000, message: 'late boom' },
        );
        const { task: completed } = await ops.waitForStatus(answering.taskId, 'completed', 30_000);
        assert.equal((completed.result as Json).isError, true);
        assert.equal(textOf(completed.result as Json), 'late error');
      });
    });

    describe('lifetime and concurrency (T-26, T-28)', () => {
      it('T-26: a task whose ttlMs runs out stops being working and then answers -32602 on get, update and cancel', async () => {
        const created = await ops.createTask('short_ttl');
        assert.equal(created.ttlMs, 300);
        const seen: string[] = [];
        const deadline = Date.now() + 5000;
        let gone: { code: number; message: string } | undefined;
        while (!gone) {
          const response = await ops.get(created.taskId);
          if (response.kind === 'error') gone = response.error;
          else {
            const task = response.result;
            if (seen.at(-1) !== task.status) seen.push(String(task.status));
            if (task.status === 'failed') assert.match(String((task.error as Json).message), /expired/i);
            else assert.equal(task.status, 'working', JSON.stringify(task));
          }
          if (Date.now() > deadline) assert.fail(`the task outlived its ttl: ${seen.join(' → ')}`);
          if (!gone) await sleepMs(25);
        }
        assert.equal(gone.code, -32602);
        assert.match(gone.message, /expired|not found/i);
        assert.ok(seen.length >= 1 && seen[0] === 'working', seen.join(' → '));
        // The expiry failure stays readable for the retention window before it is gone (FINISHED_RETENTION_MS).
        assert.ok(seen.includes('failed'), `the expiry failure was never visible: ${seen.join(' → ')}`);
        error_(await ops.update(created.taskId, { x: { action: 'cancel' } }), -32602, 'tasks/update after expiry');
        error_(await ops.cancel(created.taskId), -32602, 'tasks/cancel after expiry');
      });

      it('20 concurrent tasks on one connection each complete with their own result', async () => {
        // 1.5 s: well past the 200 ms promotion threshold even when a loaded machine delays timers.
        const created = await Promise.all(
          Array.from({ length: 20 }, (_, i) => ops.createTask('sleep', { ms: 1_500 + (i % 5) * 10, message: `task ${i}` })),
        );
        assert.equal(new Set(created.map((task) => task.taskId)).size, 20);
        const finished = await Promise.all(created.map((task) => ops.waitForStatus(task.taskId, 'completed')));
        finished.forEach(({ task }, i) => assert.equal(textOf(task.result), `task ${i}`));
      });
    });

    describe('capability errors (T-33)', () => {
      it('T-33: tasks/get, tasks/update and tasks/cancel without the extension in that request are -32021', async () => {
        const created = await ops.createTask('blocking');
        try {
          for (const capabilities of [NO_TASKS_CAPABILITIES, {}, { extensions: { 'example.com/other': {} } }]) {
            for (const [method, response] of [
              ['tasks/get', await ops.get(created.taskId, capabilities)],
              ['tasks/update', await ops.update(created.taskId, { x: { action: 'cancel' } }, capabilities)],
              ['tasks/cancel', await ops.cancel(created.taskId, capabilities)],
            ] as const) {
              const error = error_(response, -32021, `${method} with ${JSON.stringify(capabilities)}`);
              assert.deepEqual((error.data as Json | undefined)?.requiredCapabilities, { extensions: { [TASKS_EXTENSION_ID]: {} } });
            }
          }
          // A malformed declaration is a malformed envelope (-32602, §4.1), not a declaration either.
          const malformed = await ops.get(created.taskId, { extensions: { [TASKS_EXTENSION_ID]: true } });
          assert.equal(malformed.kind, 'error');
          // The refused cancel did nothing.
          assert.equal((await ops.task(created.taskId)).status, 'working');
        } finally {
          result_(await ops.cancel(created.taskId));
          await ops.waitForStatus(created.taskId, 'cancelled');
        }
      });
    });

    describe('unknown task ids (T-14, T-21, T-23)', () => {
      it('T-14/T-21/T-23: tasks/get, tasks/update and tasks/cancel of an unknown id are -32602', async () => {
        for (const taskId of [unknownTaskId(), 'no-such-task']) {
          const errors = [
            error_(await ops.get(taskId), -32602, 'tasks/get unknown'),
            error_(await ops.update(taskId, { name: { action: 'cancel' } }), -32602, 'tasks/update unknown'),
            error_(await ops.cancel(taskId), -32602, 'tasks/cancel unknown'),
          ];
          for (const error of errors) assert.equal(error.message, 'Failed to retrieve task: Task not found');
        }
      });
    });

    describe('removed methods (T-35)', () => {
      it('T-35: tasks/list and tasks/result are -32601', async () => {
        error_(await ops.send('tasks/list', {}), -32601, 'tasks/list');
        const created = await ops.createTask('always_task', { ms: 0 });
        error_(await ops.send('tasks/result', { taskId: created.taskId }), -32601, 'tasks/result');
      });
    });

    describe('server/discover (T-11, T-37)', () => {
      it('T-11: capabilities.extensions["io.modelcontextprotocol/tasks"] is exactly {}', async () => {
        const result = result_(
          (await connected().raw({ method: 'server/discover', params: { _meta: envelope() } } as never)) as never,
          'server/discover',
        );
        assert.equal(result.resultType, 'complete');
        assert.ok((result.supportedVersions as string[]).includes('2026-07-28'));
        const capabilities = result.capabilities as Json;
        assert.deepEqual((capabilities.extensions as Json)[TASKS_EXTENSION_ID], {});
        assert.ok(!('tasks' in capabilities), 'T-37: no legacy tasks capability');
      });
    });

    extra?.({ connected, ops, wireCounts: wire.counts });

    describe('push: subscriptions/listen with taskIds (T-29, T-30, T-31, T-32)', () => {
      it('ack first with only the known ids; input_required pushed, answered with tasks/update; a terminal frame; every frame stamped and schema-valid', async () => {
        const c = connected();
        const frames: Json[] = [];
        const previous = c.client.fallbackNotificationHandler;
        c.client.fallbackNotificationHandler = async (notification) => {
          frames.push(notification);
          await previous?.(notification);
        };
        const seenBefore = c.received.length;
        const waitForFrame = async (what: string, match: (task: Json) => boolean) => {
          const deadline = Date.now() + 5000;
          for (;;) {
            const frame = frames.find((f) => f.method === 'notifications/tasks' && match(f.params as Json));
            if (frame) return frame.params as Json;
            if (Date.now() > deadline) assert.fail(`no ${what} frame; got ${JSON.stringify(frames)}`);
            await sleepMs(10);
          }
        };
        try {
          const created = await ops.createTask('hello_world');
          const unknown = unknownTaskId();
          const subscription = await c.client.listen({ taskIds: [created.taskId, unknown] } as never);
          const pushed = await waitForFrame('input_required', (task) => task.taskId === created.taskId && task.status === 'input_required');
          assert.deepEqual(Object.keys(pushed.inputRequests as Json), ['name']);
          result_(await ops.update(created.taskId, { name: { action: 'accept', content: { name: 'Luca' } } }), 'tasks/update');
          const done = await waitForFrame('completed', (task) => task.taskId === created.taskId && task.status === 'completed');
          assert.equal(textOf(done.result), 'Hello, Luca!');
          await subscription.close();

          const mine = c.received.slice(seenBefore) as Json[];
          // The SDK client re-parses the acknowledgement and drops taskIds (P8): read it off the wire.
          const ackIndex = mine.findIndex((m) => m.method === 'notifications/subscriptions/acknowledged');
          assert.ok(ackIndex >= 0, 'an acknowledgement');
          const ack = mine[ackIndex]!.params as Json;
          const subscriptionId = (ack._meta as Json)['io.modelcontextprotocol/subscriptionId'];
          assert.ok(subscriptionId !== undefined, 'the ack carries the subscription id');
          assert.deepEqual((ack.notifications as Json).taskIds, [created.taskId], 'unknown ids are left out (D-11)');
          const firstFrame = mine.findIndex((m) => m.method === 'notifications/tasks');
          assert.ok(firstFrame > ackIndex, 'the acknowledgement comes first (T-31)');
          for (const frame of mine.filter((m) => m.method === 'notifications/tasks')) {
            const parsed = TaskStatusNotificationV2Schema.safeParse(frame);
            assert.ok(parsed.success, `schema-valid frame: ${JSON.stringify(frame)}`);
            const params = frame.params as Json;
            assert.equal((params._meta as Json)['io.modelcontextprotocol/subscriptionId'], subscriptionId);
            assert.equal(params.resultType, undefined, 'frames carry no resultType of their own (T-31)');
            assert.notEqual(params.taskId, unknown);
          }
          const chatter = mine.filter((m) => m.method === 'notifications/progress' || m.method === 'notifications/message');
          assert.deepEqual(chatter, [], 'no progress or log notifications for a task (T-32)');
        } finally {
          if (previous) c.client.fallbackNotificationHandler = previous;
          else delete c.client.fallbackNotificationHandler;
        }
      });
    });

    describe('wire shapes (ext-tasks V2 schemas)', () => {
      it('every task-shaped message the server sent passed the V2 schemas, covering every status', () => {
        wire.check();
        const counts = wire.counts;
        for (const kind of [
          'tools/call:task',
          'tools/call:complete',
          'tasks/get:working',
          'tasks/get:input_required',
          'tasks/get:completed',
          'tasks/get:failed',
          'tasks/get:cancelled',
          'tasks/update',
          'tasks/cancel',
        ]) {
          assert.ok((counts[kind] ?? 0) > 0, `no ${kind} message was checked: ${JSON.stringify(counts)}`);
        }
        // The push scenario's frames were validated too; that none arrives before its listen's ack is checked there (T-29).
        assert.ok((counts['notifications/tasks'] ?? 0) > 0, `no notifications/tasks frame was checked: ${JSON.stringify(counts)}`);
      });
    });
  });
}
