/**
 * Validates every task-shaped message a server sent with the ext-tasks 0.2.2
 * V2 zod schemas — the shapes the official client parses — plus the spec
 * rules the schemas are too lenient for (T-05, T-06, §1.3, P1, D-04).
 */
import {
  CallToolResultV2Schema,
  CancelTaskResultV2Schema,
  CreateTaskResultV2Schema,
  DetailedTaskV2Schema,
  GetTaskResultV2Schema,
  TaskStatusNotificationV2Schema,
  UpdateTaskResultV2Schema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import type { ConnectedClient, Exchange } from './extTasksClient.js';

/** How many messages of each kind were checked (kinds like `tasks/get:completed`). */
export type WireCounts = Record<string, number>;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

function schemaProblem(
  what: string,
  parsed: { success: boolean; error?: { issues: Array<{ path: PropertyKey[]; message: string }> } },
): string | undefined {
  if (parsed.success) return undefined;
  const issues = (parsed.error?.issues ?? []).map((issue) => `${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`);
  return `${what}: ${issues.join('; ')}`;
}

/** Problems found in one exchange; `counts` is bumped per checked kind. */
export function checkExchange(exchange: Exchange, counts: WireCounts): string[] {
  const problems: string[] = [];
  const response = exchange.response;
  if (!response) return problems;
  const where = `${exchange.method} (id ${JSON.stringify(exchange.id)})`;
  const bump = (kind: string) => (counts[kind] = (counts[kind] ?? 0) + 1);
  const add = (problem: string | undefined) => problem && problems.push(`${where}: ${problem}`);

  if ('error' in response) {
    const error = response.error;
    if (!isObject(error) || !Number.isInteger(error.code) || typeof error.message !== 'string') {
      add(`malformed JSON-RPC error ${JSON.stringify(error)}`);
    } else if ([-32002, -32003, -32042].includes(error.code as number)) {
      add(`retired error code ${String(error.code)} (§1.10, D-01)`);
    }
    bump(`error:${exchange.method}`);
    return problems;
  }
  const result = response.result;
  if (!isObject(result)) {
    add(`result is not an object: ${JSON.stringify(result)}`);
    return problems;
  }
  // T-38: results carry serverInfo (SHOULD; the SDK stamps it on every 2026-07-28 result).
  if (exchange.method === 'tools/call' || exchange.method.startsWith('tasks/')) {
    const meta = result._meta;
    if (!isObject(meta) || !isObject(meta['io.modelcontextprotocol/serverInfo']))
      add('result lacks _meta["io.modelcontextprotocol/serverInfo"] (T-38)');
  }
  // T-05: "task" is reserved for tools/call's CreateTaskResult.
  if (result.resultType === 'task' && exchange.method !== 'tools/call') add('resultType "task" on a method other than tools/call (T-05)');

  switch (exchange.method) {
    case 'tools/call': {
      if (result.resultType === 'task') {
        add(schemaProblem('CreateTaskResultV2Schema', CreateTaskResultV2Schema.safeParse(result)));
        // §1.3: a Task, not a DetailedTask, and no CallToolResult leftovers (P1).
        for (const key of ['content', 'inputRequests', 'result', 'error', 'task']) {
          if (key in result) add(`CreateTaskResult carries "${key}" (§1.3, T-05, P1)`);
        }
        if (!('ttlMs' in result)) add('CreateTaskResult lacks ttlMs (§1.2)');
        bump('tools/call:task');
      } else {
        add(schemaProblem('CallToolResultV2Schema', CallToolResultV2Schema.safeParse(result)));
        bump(`tools/call:${String(result.resultType)}`);
      }
      break;
    }
    case 'tasks/get': {
      add(schemaProblem('GetTaskResultV2Schema', GetTaskResultV2Schema.safeParse(result)));
      if (result.resultType !== 'complete') add(`resultType ${JSON.stringify(result.resultType)}, expected "complete" (T-06)`);
      const { resultType: _resultType, _meta, ...task } = result;
      add(schemaProblem('DetailedTaskV2Schema', DetailedTaskV2Schema.safeParse(task)));
      if (!('ttlMs' in task)) add('task lacks ttlMs (§1.2)');
      if (task.status === 'completed') {
        // D-04/P4: the client settles the nested result with CallToolResultV2Schema.
        add(schemaProblem('CallToolResultV2Schema(result)', CallToolResultV2Schema.safeParse(task.result)));
      }
      // T-12: only the fields of the matching variant.
      const extras: Record<string, string[]> = {
        working: ['inputRequests', 'result', 'error'],
        input_required: ['result', 'error'],
        completed: ['inputRequests', 'error'],
        failed: ['inputRequests', 'result'],
        cancelled: ['inputRequests', 'result', 'error'],
      };
      for (const key of extras[String(task.status)] ?? []) if (key in task) add(`${String(task.status)} task carries "${key}" (T-12)`);
      bump(`tasks/get:${String(task.status)}`);
      break;
    }
    case 'tasks/update':
      add(schemaProblem('UpdateTaskResultV2Schema', UpdateTaskResultV2Schema.safeParse(result)));
      if (result.resultType !== 'complete') add('tasks/update result is not {resultType:"complete"} (T-20)');
      bump('tasks/update');
      break;
    case 'tasks/cancel':
      add(schemaProblem('CancelTaskResultV2Schema', CancelTaskResultV2Schema.safeParse(result)));
      if (result.resultType !== 'complete') add('tasks/cancel result is not {resultType:"complete"} (T-23)');
      bump('tasks/cancel');
      break;
    default:
      bump(`other:${exchange.method}`);
  }
  return problems;
}

/** Checks `notifications/tasks` messages (none are expected without a listen stream, T-29). */
export function checkNotification(message: unknown, counts: WireCounts): string[] {
  if (!isObject(message) || message.method !== 'notifications/tasks') return [];
  counts['notifications/tasks'] = (counts['notifications/tasks'] ?? 0) + 1;
  const problem = schemaProblem('TaskStatusNotificationV2Schema', TaskStatusNotificationV2Schema.safeParse(message));
  return problem ? [`notifications/tasks: ${problem}`] : [];
}

/**
 * A checker over one connection: `check()` validates what arrived since the
 * previous call and throws listing every problem; `counts` accumulates.
 */
export function wireChecker(connected: () => ConnectedClient | undefined) {
  const counts: WireCounts = {};
  const checked = new WeakSet<Exchange>();
  let receivedCursor = 0;
  return {
    counts,
    check(): void {
      const client = connected();
      if (!client) return;
      const problems: string[] = [];
      // Exchanges whose response has arrived; ones still in flight are checked next time.
      for (const exchange of client.exchanges) {
        if (!exchange.response || checked.has(exchange)) continue;
        checked.add(exchange);
        problems.push(...checkExchange(exchange, counts));
      }
      for (; receivedCursor < client.received.length; receivedCursor++) {
        problems.push(...checkNotification(client.received[receivedCursor], counts));
      }
      if (problems.length > 0) throw new Error(`Server messages failed the ext-tasks V2 schema checks:\n- ${problems.join('\n- ')}`);
    },
  };
}
