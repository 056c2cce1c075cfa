/**
 * fast-check arbitraries of hostile JSON-RPC frames: invalid JSON, wrong
 * types, huge and deeply nested values, unknown methods, bad `_meta`,
 * batches, and (for HTTP) standard headers that disagree with the body.
 * Task ids come from a pool that includes the victim's real ids, so every
 * cross-principal attempt is tried too.
 */
import fc from 'fast-check';
import { CLIENT_INFO, PROTOCOL_VERSION, TASKS_CAPABILITIES } from '../support/extTasksClient.js';

export interface Frame {
  /** The exact text sent (an HTTP body, a WebSocket text frame, a stdio line). */
  text: string;
  /** HTTP only: headers that replace the standard ones (`null` removes one). */
  headers: Record<string, string | null>;
  /** What generated it, for the failure report. */
  kind: string;
  /** The frame is a single well-formed JSON-RPC notification (no answer is due on stdio/WebSocket; HTTP 202). */
  notification: boolean;
}

const METHODS = [
  'tools/call',
  'tools/list',
  'tasks/get',
  'tasks/update',
  'tasks/cancel',
  'tasks/list',
  'tasks/result',
  'subscriptions/listen',
  'initialize',
  'ping',
  'server/discover',
  'resources/list',
  'prompts/get',
  'notifications/cancelled',
  'notifications/initialized',
  'notifications/tasks',
  'completion/complete',
  'x/unknown',
  '',
];
const TOOL_NAMES = ['echo', 'hold', 'ask3', 'no_such_tool', '', '../../etc/passwd'];

const KEY = {
  version: 'io.modelcontextprotocol/protocolVersion',
  info: 'io.modelcontextprotocol/clientInfo',
  caps: 'io.modelcontextprotocol/clientCapabilities',
};

/** Any JSON value, small. */
const anyJson = fc.jsonValue({ maxDepth: 3 });

/** A value nested `depth` levels deep (arrays or objects). */
const deepValue = fc.tuple(fc.integer({ min: 10, max: 300 }), fc.boolean()).map(([depth, arrays]) => {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = arrays ? [value] : { k: value };
  return value;
});

/** A long string: below and above the frame/body limit of the fuzz server. */
const hugeString = fc.integer({ min: 1_000, max: 80_000 }).map((length) => 'A'.repeat(length));

const hostileValue = fc.oneof(
  { weight: 4, arbitrary: anyJson },
  { weight: 1, arbitrary: deepValue },
  { weight: 1, arbitrary: hugeString },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      null,
      -1,
      1e308,
      -0,
      '',
      '\u0000',
      '\ud800',
      '__proto__',
      { __proto__: { polluted: true } },
      { constructor: { prototype: { x: 1 } } },
    ),
  },
);

const meta = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ [KEY.version]: PROTOCOL_VERSION, [KEY.info]: CLIENT_INFO, [KEY.caps]: TASKS_CAPABILITIES }) },
  { weight: 1, arbitrary: fc.constant({ [KEY.version]: PROTOCOL_VERSION, [KEY.info]: CLIENT_INFO, [KEY.caps]: {} }) },
  {
    weight: 1,
    arbitrary: fc.record(
      {
        [KEY.version]: fc.oneof(fc.constantFrom('2025-11-25', '2026-07-28', '1999-01-01', ''), anyJson),
        [KEY.info]: fc.oneof(fc.constant(CLIENT_INFO), anyJson),
        [KEY.caps]: fc.oneof(
          fc.constant(TASKS_CAPABILITIES),
          anyJson,
          fc.constant({ extensions: { 'io.modelcontextprotocol/tasks': 'yes' } }),
        ),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: hostileValue },
);

const id = fc.oneof(
  { weight: 6, arbitrary: fc.string({ minLength: 1, maxLength: 12 }).map((s) => `fz-${s}`) },
  { weight: 2, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.constantFrom(null, 1.5, true, [], {}, '', 2 ** 60) },
);

function taskIdOf(pool: readonly string[]) {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...(pool.length ? pool : ['0'.repeat(32)])) },
    { weight: 1, arbitrary: fc.stringMatching(/^[0-9a-f]{32}$/) },
    { weight: 1, arbitrary: hostileValue },
  );
}

function paramsFor(method: string, pool: readonly string[]) {
  const withMeta = <T extends Record<string, unknown>>(base: fc.Arbitrary<T>) =>
    fc.tuple(base, fc.option(meta, { nil: undefined, freq: 5 })).map(([params, m]) => (m === undefined ? params : { ...params, _meta: m }));
  switch (method) {
    case 'tools/call':
      return withMeta(
        fc.record(
          {
            name: fc.oneof(fc.constantFrom(...TOOL_NAMES), anyJson),
            arguments: fc.oneof(fc.record({ value: hostileValue }), hostileValue),
          },
          { requiredKeys: ['name'] },
        ),
      );
    case 'tasks/get':
    case 'tasks/cancel':
    case 'tasks/update':
      return withMeta(
        fc.record(
          {
            taskId: taskIdOf(pool),
            inputResponses: fc.oneof(fc.dictionary(fc.constantFrom('a', 'b', 'c', 'name'), hostileValue), hostileValue),
          },
          { requiredKeys: [] },
        ),
      );
    case 'subscriptions/listen':
      return withMeta(
        fc.record(
          {
            notifications: fc.oneof(
              fc.record(
                {
                  taskIds: fc.oneof(fc.array(taskIdOf(pool), { maxLength: 6 }), hostileValue),
                  toolsListChanged: fc.oneof(fc.boolean(), anyJson),
                },
                { requiredKeys: [] },
              ),
              hostileValue,
            ),
          },
          { requiredKeys: [] },
        ),
      );
    case 'notifications/cancelled':
      return withMeta(fc.record({ requestId: id, reason: anyJson }, { requiredKeys: [] }));
    default:
      return withMeta(fc.dictionary(fc.string({ maxLength: 8 }), hostileValue, { maxKeys: 4 }));
  }
}

/** A JSON-RPC-shaped object, mostly plausible, sometimes with wrong types. */
function message(pool: readonly string[]) {
  return fc.constantFrom(...METHODS).chain((method) =>
    fc.record(
      {
        jsonrpc: fc.oneof({ weight: 8, arbitrary: fc.constant('2.0') }, { weight: 1, arbitrary: anyJson }),
        id,
        method: fc.oneof({ weight: 8, arbitrary: fc.constant(method) }, { weight: 1, arbitrary: anyJson }),
        params: fc.oneof({ weight: 8, arbitrary: paramsFor(method, pool) }, { weight: 1, arbitrary: hostileValue }),
      },
      // Requests mostly; without `id` it is a notification; sometimes no params or jsonrpc.
      { requiredKeys: ['method'] },
    ),
  );
}

const isNotification = (value: unknown): boolean => {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const m = value as Record<string, unknown>;
  return (
    m.jsonrpc === '2.0' &&
    typeof m.method === 'string' &&
    !('id' in m) &&
    (m.params === undefined || (typeof m.params === 'object' && m.params !== null && !Array.isArray(m.params)))
  );
};

/** Standard headers as a client derives them from the body, then perturbed (mismatch, missing, wrong content type). */
function headersFor(value: unknown) {
  const m = (value ?? {}) as { method?: unknown; params?: { name?: unknown; taskId?: unknown } };
  const method = typeof m.method === 'string' ? m.method : 'x';
  const name = method === 'tools/call' ? m.params?.name : method.startsWith('tasks/') ? m.params?.taskId : undefined;
  const standard: Record<string, string | null> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL_VERSION,
    'mcp-method': method,
    ...(typeof name === 'string' && /^[\x20-\x7e]*$/.test(name) ? { 'mcp-name': name } : {}),
  };
  const headerValue = fc.oneof(
    fc.constantFrom('tools/call', 'tasks/get', 'subscriptions/listen', '2025-11-25', '', 'x'),
    fc.stringMatching(/^[\x21-\x7e]{0,20}$/),
  );
  return fc.oneof(
    { weight: 5, arbitrary: fc.constant(standard) },
    {
      weight: 2,
      arbitrary: fc
        .record(
          { 'mcp-method': fc.option(headerValue, { nil: null }), 'mcp-name': fc.option(headerValue, { nil: null }) },
          { requiredKeys: [] },
        )
        .map((over) => ({ ...standard, ...over })),
    },
    {
      weight: 1,
      arbitrary: fc
        .record(
          {
            'mcp-protocol-version': fc.option(headerValue, { nil: null }),
            'content-type': fc.constantFrom('text/plain', 'application/json; charset=utf-8', 'application/x-www-form-urlencoded'),
          },
          { requiredKeys: [] },
        )
        .map((over) => ({ ...standard, ...over })),
    },
  );
}

/** One hostile frame; `pool` holds real task ids (the victim's) to aim at. */
export function frameArbitrary(pool: readonly string[]): fc.Arbitrary<Frame> {
  const fromValue = (kind: string) => (value: unknown) =>
    headersFor(Array.isArray(value) ? value[0] : value).map((headers) => ({
      text: JSON.stringify(value),
      headers,
      kind,
      notification: isNotification(value),
    }));
  return fc
    .oneof(
      { weight: 8, arbitrary: message(pool).chain(fromValue('message')) },
      { weight: 1, arbitrary: fc.array(message(pool), { maxLength: 4 }).chain(fromValue('batch')) },
      { weight: 1, arbitrary: hostileValue.chain(fromValue('json')) },
      { weight: 1, arbitrary: fc.string({ maxLength: 200 }).map((text) => ({ text, headers: {}, kind: 'text', notification: false })) },
      {
        weight: 1,
        arbitrary: message(pool).chain((value) =>
          fc.nat({ max: 200 }).map((cut) => {
            const text = JSON.stringify(value);
            return {
              text: text.slice(0, Math.min(cut, Math.max(0, text.length - 1))),
              headers: {},
              kind: 'truncated',
              notification: false,
            };
          }),
        ),
      },
    )
    .filter((frame) => !frame.text.includes('\n') || frame.kind !== 'text');
}
