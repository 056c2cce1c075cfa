/**
 * Raw task operations over a connected client (JSON-RPC exactly as the
 * ext-tasks client frames it), with small assertion helpers.
 */
import assert from 'node:assert/strict';
import { envelope, TASKS_CAPABILITIES, type ConnectedClient } from './extTasksClient.js';

export type Json = Record<string, unknown>;
export type RawResponse = { kind: 'result'; result: Json } | { kind: 'error'; error: { code: number; message: string; data?: unknown } };

/** Capabilities without the tasks extension (T-01, T-33). */
export const NO_TASKS_CAPABILITIES = { elicitation: { form: {} } };

export const sleepMs = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * Raw task operations. Every successful `tasks/get` is also checked against
 * what earlier ones showed for the same task: `createdAt` never changes,
 * `lastUpdatedAt` never goes back, and a terminal status never changes
 * again (T-28, I-10).
 */
export function taskOps(connected: () => ConnectedClient) {
  const send = async (method: string, params: Json, capabilities: Json = TASKS_CAPABILITIES): Promise<RawResponse> =>
    (await connected().raw({ method, params: { ...params, _meta: envelope(capabilities) } } as never)) as RawResponse;
  const history = new Map<string, { status: string; createdAt: string; lastUpdatedAt: string; terminal?: string }>();
  const observe = (task: Json) => {
    const id = String(task.taskId);
    const now = { status: String(task.status), createdAt: String(task.createdAt), lastUpdatedAt: String(task.lastUpdatedAt) };
    const before = history.get(id);
    if (before) {
      assert.equal(now.createdAt, before.createdAt, `task ${id}: createdAt changed`);
      assert.ok(Date.parse(now.lastUpdatedAt) >= Date.parse(before.lastUpdatedAt), `task ${id}: lastUpdatedAt went back`);
      if (before.terminal) assert.equal(now.status, before.status, `task ${id}: left the terminal status ${before.status} (T-28)`);
    }
    history.set(id, { ...now, ...(TERMINAL.has(now.status) ? { terminal: now.status } : {}) });
  };

  const ops = {
    send,
    call: (name: string, args: Json = {}, capabilities: Json = TASKS_CAPABILITIES) =>
      send('tools/call', { name, arguments: args }, capabilities),
    get: async (taskId: string, capabilities?: Json) => {
      const response = await send('tasks/get', { taskId }, capabilities);
      if (response.kind === 'result') observe(response.result);
      return response;
    },
    update: (taskId: string, inputResponses: Json, capabilities?: Json) => send('tasks/update', { taskId, inputResponses }, capabilities),
    cancel: (taskId: string, capabilities?: Json) => send('tasks/cancel', { taskId }, capabilities),

    /** Calls a tool that must become a task; returns the CreateTaskResult. */
    async createTask(name: string, args: Json = {}): Promise<Json & { taskId: string }> {
      const result = result_(await ops.call(name, args), `tools/call ${name}`);
      assert.equal(result.resultType, 'task', `tools/call ${name} should have become a task: ${JSON.stringify(result)}`);
      return result as Json & { taskId: string };
    },

    /** tasks/get that must succeed. */
    async task(taskId: string): Promise<Json> {
      return result_(await ops.get(taskId), `tasks/get ${taskId}`);
    },

    /** Polls tasks/get until `until(task)`; returns the matching task and every status seen. */
    async pollUntil(taskId: string, until: (task: Json) => boolean, timeoutMs = 5000): Promise<{ task: Json; seen: string[] }> {
      const seen: string[] = [];
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const task = await ops.task(taskId);
        if (seen.at(-1) !== task.status) seen.push(String(task.status));
        if (until(task)) return { task, seen };
        if (Date.now() > deadline)
          assert.fail(`task ${taskId} did not reach the expected state in ${timeoutMs} ms; last: ${JSON.stringify(task)}`);
        await sleepMs(20);
      }
    },

    /** Polls until the task has `status`. */
    waitForStatus(taskId: string, status: string, timeoutMs?: number) {
      return ops.pollUntil(taskId, (task) => task.status === status, timeoutMs);
    },
  };
  return ops;
}

/** The result of a response that must be a result. */
export function result_(response: RawResponse, what = 'request'): Json {
  if (response.kind !== 'result') assert.fail(`${what} failed: ${JSON.stringify(response.error)}`);
  return response.result;
}

/** The error of a response that must be an error with `code`. */
export function error_(response: RawResponse, code: number, what = 'request'): { code: number; message: string; data?: unknown } {
  if (response.kind !== 'error') assert.fail(`${what} should have failed with ${code}, got ${JSON.stringify(response.result)}`);
  assert.equal(response.error.code, code, `${what}: ${JSON.stringify(response.error)}`);
  return response.error;
}

/** The text of the first content block of a CallToolResult. */
export function textOf(result: unknown): string | undefined {
  const content = (result as { content?: Array<{ type?: string; text?: string }> } | undefined)?.content;
  return content?.[0]?.type === 'text' ? content[0].text : undefined;
}

/** A well-formed task id nobody issued. */
export function unknownTaskId(): string {
  return 'f'.repeat(32);
}
