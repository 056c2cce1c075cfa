/**
 * The HTTP fast lane for tasks/get|update|cancel and for
 * the tools/call that creates a task answers exactly as the SDK
 * path does. A differential property test: generated
 * requests, valid and invalid — standard headers present, absent or
 * mismatched (T-60…T-62), protocol versions, the tasks capability present or
 * absent in `_meta` (T-33), ids of every JSON-RPC kind, params shapes,
 * principals with bearer tokens (I-7, T-10), tasks working / input_required /
 * completed / failed / cancelled / unknown / another principal's (T-12,
 * T-14) — go to two listeners of one runtime, the lane on and off, over real
 * HTTP on 127.0.0.1; both must give the same status, the same headers that
 * matter and the same JSON body.
 *
 * Nothing is normalised but what varies by itself: the framing headers
 * (`date`, `connection`, `keep-alive`, `content-length`, `transfer-encoding`),
 * an internal error's reference id, the ids of twin tasks (an update or
 * cancel of a live task goes to a fresh task per path), and a created task's
 * id and timestamps. The lane writes `content-length`,
 * the SDK path streams: that is how the test counts that the lane, not a
 * fall-through, answered.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { createRuntime, defineTool, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { tokenFileVerifier } from '../../src/auth/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { listenHttp } from '../../src/transports/index.js';
import demoTools from '../../examples/demo/tools.js';
import { testTools } from '../e2e/fixtures/testTools.js';
import { writeTokenFile } from '../support/authFixtures.js';
import { tempDir, waitFor } from '../support/processes.js';

/** Bounded so the property runs in seconds (each run is two or three HTTP exchanges). */
const NUM_RUNS = 250;
const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdefgh';
/** A principal holding its maximum of unfinished tasks: every create of hers is refused (maxLiveTasksPerPrincipal). */
const CAROL = 'carol-token-0123456789abcdef';
const MAX_LIVE = 30;
const VERSION = '2026-07-28';
const PV = 'io.modelcontextprotocol/protocolVersion';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const INFO = 'io.modelcontextprotocol/clientInfo';
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const MAX_BODY = 8 * 1024;

type State = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled' | 'unknown' | 'foreign';
type Json = Record<string, unknown>;

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One raw POST (node:http: no header is added or normalised on the way). */
function post(url: string, headers: Record<string, string>, body: string | string[]): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    // A list is sent as chunks of a chunked body (no Content-Length), each its own write.
    if (Array.isArray(body)) {
      for (const part of body) req.write(part);
      req.end();
    } else req.end(body);
  });
}

const FRAMING = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);

/** A created task's id and timestamps, which differ between any two creates by nature. */
const BY_NATURE = ['taskId', 'createdAt', 'lastUpdatedAt'];

/** The headers that matter, and the body parsed when it is JSON (an internal error's ref id blanked). */
function comparable(reply: Reply, taskId?: string): { status: number; headers: Json; body: unknown } {
  const headers: Json = {};
  for (const [name, value] of Object.entries(reply.headers)) if (!FRAMING.has(name)) headers[name] = value;
  // Twin tasks (see below) differ only in their ids, which some error messages quote.
  const text = taskId === undefined ? reply.text : reply.text.replaceAll(taskId, '<task id>');
  let body: unknown = text;
  try {
    body = JSON.parse(text.replace(/\(ref [0-9a-f]{8}\)/g, '(ref *)').replace(/"ref":"[0-9a-f]{8}"/g, '"ref":"*"'));
  } catch {
    // not JSON: compared as text
  }
  const result = (body as { result?: Json } | null)?.result;
  if (result?.resultType === 'task') for (const key of BY_NATURE) if (key in result) result[key] = '*';
  return { status: reply.status, headers, body };
}

/** Whether the lane (not the SDK path it falls through to) wrote the reply. */
const answeredByLane = (reply: Reply) => reply.headers['content-length'] !== undefined && reply.headers['transfer-encoding'] === undefined;

// ---- generated requests ------------------------------------------------------------------------------------------

const principalArb = fc.constantFrom<Array<string | null>>(
  `Bearer ${ALICE}`,
  `Bearer ${ALICE}`,
  `Bearer ${BOB}`,
  null,
  'Bearer nope-0123456789abcdef',
  'Basic YWxpY2U6eA==',
);
const stateArb = fc.constantFrom<State[]>('working', 'input_required', 'completed', 'failed', 'cancelled', 'unknown', 'foreign');
const methodArb = fc.constantFrom('tasks/get', 'tasks/get', 'tasks/update', 'tasks/cancel', 'tasks/list', 'tasks/result');
const idArb = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.integer(),
  fc.constantFrom<unknown[]>(0, -1, 1.5, null, 2 ** 60, { a: 1 }, [1], true, ''),
  fc.constant(undefined), // a notification
);
const capabilitiesArb = fc.constantFrom<unknown[]>(
  TASKS,
  { ...TASKS, elicitation: { form: {} } },
  { extensions: { 'io.modelcontextprotocol/tasks': { x: 1 } } },
  {},
  { tasks: {} }, // the legacy capability never counts (T-37)
  { extensions: { 'io.modelcontextprotocol/tasks': null } },
  { extensions: 5 },
  'tasks',
  undefined,
);
const metaArb = fc.record(
  {
    version: fc.constantFrom<unknown[]>(VERSION, VERSION, VERSION, '2025-11-25', '2099-01-01', 7, undefined),
    capabilities: capabilitiesArb,
    info: fc.constantFrom<unknown[]>({ name: 'fc', version: '1' }, undefined, { name: 5 }, 'x'),
    foreign: fc.constantFrom<unknown[]>(undefined, 'x', { deep: true }, 'pad'),
  },
  { requiredKeys: ['version', 'capabilities', 'info', 'foreign'] },
);
const inputResponsesArb = fc.constantFrom<unknown[]>(
  undefined,
  {},
  { first: { action: 'accept', content: { value: 'v' } } },
  { first: { action: 7 } },
  { first: { method: 'elicitation/create', result: { action: 'cancel' } } },
  { never_issued: { action: 'decline' } },
  [],
  null,
  'x',
);
const paramsShapeArb = fc.constantFrom(
  'ok',
  'ok',
  'ok',
  'numericTaskId',
  'noTaskId',
  'extraKey',
  'requestState',
  'notObject',
  'absent',
  'noMeta',
);
const headerModeArb = fc.constantFrom('right', 'right', 'right', 'absent', 'wrong');
const nameModeArb = fc.constantFrom('right', 'right', 'right', 'absent', 'wrong', 'base64', 'badBase64');
const contentTypeArb = fc.constantFrom<Array<string | null>>(
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  null,
);
const acceptArb = fc.constantFrom<Array<string | null>>(
  'application/json, text/event-stream',
  'text/event-stream',
  'application/json',
  null,
);
const framingArb = fc.constantFrom('plain', 'plain', 'plain', 'plain', 'batch', 'bom', 'notJson', 'deep', 'tooLarge', 'spaced');

/** Mostly `usual` (a well-behaved client), sometimes anything `other` gives: so some requests are clean and most differ in one or two ways. */
const mostly = <T>(usual: T, other: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: fc.constant(usual), weight: 12 }, { arbitrary: other, weight: 1 });

const caseArb = fc.record({
  principal: mostly<string | null>(`Bearer ${ALICE}`, principalArb),
  state: stateArb,
  method: methodArb,
  id: fc.oneof({ arbitrary: fc.oneof(fc.string({ maxLength: 6 }), fc.integer()), weight: 6 }, { arbitrary: idArb, weight: 1 }),
  jsonrpc: mostly<unknown>('2.0', fc.constantFrom<unknown[]>('1.0', undefined)),
  meta: fc.record(
    {
      version: mostly<unknown>(
        VERSION,
        metaArb.map((meta) => meta.version),
      ),
      capabilities: mostly<unknown>(TASKS, capabilitiesArb),
      info: mostly<unknown>(
        { name: 'fc', version: '1' },
        metaArb.map((meta) => meta.info),
      ),
      foreign: mostly<unknown>(
        undefined,
        metaArb.map((meta) => meta.foreign),
      ),
    },
    { requiredKeys: ['version', 'capabilities', 'info', 'foreign'] },
  ),
  inputResponses: inputResponsesArb,
  paramsShape: mostly('ok', paramsShapeArb),
  versionHeader: mostly('right', headerModeArb),
  methodHeader: mostly('right', headerModeArb),
  nameHeader: mostly('right', nameModeArb),
  contentType: mostly<string | null>('application/json', contentTypeArb),
  accept: mostly<string | null>('application/json, text/event-stream', acceptArb),
  framing: mostly('plain', framingArb),
});
type Case = typeof caseArb extends fc.Arbitrary<infer T> ? T : never;

/** The request of `c` for task `taskId`: headers and body text. */
function requestOf(c: Case, taskId: string): { headers: Record<string, string>; body: string } {
  const meta: Json = {};
  if (c.meta.version !== undefined) meta[PV] = c.meta.version;
  if (c.meta.capabilities !== undefined) meta[CAPS] = c.meta.capabilities;
  if (c.meta.info !== undefined) meta[INFO] = c.meta.info;
  if (c.meta.foreign !== undefined) meta['example.com/trace'] = c.framing === 'tooLarge' ? 'x'.repeat(MAX_BODY) : c.meta.foreign;
  let params: unknown = { taskId, _meta: meta };
  const p = params as Json;
  if (c.method === 'tasks/update' && c.inputResponses !== undefined) p.inputResponses = c.inputResponses;
  switch (c.paramsShape) {
    case 'numericTaskId':
      p.taskId = 42;
      break;
    case 'noTaskId':
      delete p.taskId;
      break;
    case 'extraKey':
      p.cursor = 'c';
      break;
    case 'requestState':
      p.requestState = 'opaque';
      break;
    case 'notObject':
      params = [taskId];
      break;
    case 'absent':
      params = undefined;
      break;
    case 'noMeta':
      delete p._meta;
      break;
  }
  if (c.framing === 'deep') p.deep = JSON.parse('['.repeat(80) + ']'.repeat(80)) as unknown;
  const message: Json = { jsonrpc: c.jsonrpc, method: c.method };
  if (c.id !== undefined) message.id = c.id;
  if (params !== undefined) message.params = params;
  let body = JSON.stringify(c.framing === 'batch' ? [message] : message);
  if (c.framing === 'bom') body = `\ufeff${body}`;
  if (c.framing === 'notJson') body = body.slice(0, -1);
  if (c.framing === 'spaced') body = ` \n${body}\n `;

  const headers: Record<string, string> = {};
  if (c.contentType !== null) headers['content-type'] = c.contentType;
  if (c.accept !== null) headers.accept = c.accept;
  if (c.principal !== null) headers.authorization = c.principal;
  const claimed = typeof c.meta.version === 'string' ? c.meta.version : VERSION;
  if (c.versionHeader !== 'absent') headers['mcp-protocol-version'] = c.versionHeader === 'right' ? claimed : '2025-06-18';
  if (c.methodHeader !== 'absent') headers['mcp-method'] = c.methodHeader === 'right' ? c.method : 'tasks/get';
  if (c.nameHeader === 'right') headers['mcp-name'] = taskId;
  if (c.nameHeader === 'wrong') headers['mcp-name'] = `${taskId}x`;
  if (c.nameHeader === 'base64') headers['mcp-name'] = `=?base64?${Buffer.from(taskId).toString('base64')}?=`;
  if (c.nameHeader === 'badBase64') headers['mcp-name'] = '=?base64?***?=';
  return { headers, body };
}

// ---- generated tools/call requests ---------------------------------------------------------------

/** always_task/unlimited_task: local task tools (the lane's); never_task: not a task tool; no_such_tool: unknown. */
const toolArb = fc.constantFrom('always_task', 'always_task', 'always_task', 'unlimited_task', 'never_task', 'no_such_tool');
const argsArb = fc.constantFrom<unknown[]>(
  { ms: 0 },
  { ms: 0 },
  {},
  undefined,
  { ms: -1 },
  { ms: 'x' },
  { ms: 1, extra: true },
  'notObject',
  [1],
  null,
);
const callShapeArb = fc.constantFrom('ok', 'noName', 'numericName', 'extraKey', 'requestState', 'inputResponses', 'task', 'noMeta');

const callArb = fc.record({
  principal: fc.oneof(
    { arbitrary: fc.constant<string | null>(`Bearer ${ALICE}`), weight: 8 },
    { arbitrary: fc.constant<string | null>(`Bearer ${CAROL}`), weight: 2 },
    { arbitrary: principalArb, weight: 1 },
  ),
  tool: toolArb,
  args: fc.oneof({ arbitrary: fc.constant<unknown>({ ms: 0 }), weight: 4 }, { arbitrary: argsArb, weight: 3 }),
  id: fc.oneof({ arbitrary: fc.oneof(fc.string({ maxLength: 6 }), fc.integer()), weight: 6 }, { arbitrary: idArb, weight: 1 }),
  jsonrpc: mostly<unknown>('2.0', fc.constantFrom<unknown[]>('1.0', undefined)),
  version: mostly<unknown>(
    VERSION,
    metaArb.map((meta) => meta.version),
  ),
  capabilities: fc.oneof({ arbitrary: fc.constant<unknown>(TASKS), weight: 4 }, { arbitrary: capabilitiesArb, weight: 1 }),
  foreign: mostly<unknown>(
    undefined,
    metaArb.map((meta) => meta.foreign),
  ),
  traceparent: fc.constantFrom<unknown[]>(undefined, undefined, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'nonsense'),
  shape: mostly('ok', callShapeArb),
  versionHeader: mostly('right', headerModeArb),
  methodHeader: mostly('right', headerModeArb),
  nameHeader: mostly('right', nameModeArb),
  contentType: mostly<string | null>('application/json', contentTypeArb),
  accept: mostly<string | null>('application/json, text/event-stream', acceptArb),
  framing: mostly('plain', framingArb),
});
type Call = typeof callArb extends fc.Arbitrary<infer T> ? T : never;

/** The `tools/call` of `c`: headers and body text. */
function callOf(c: Call): { headers: Record<string, string>; body: string } {
  const meta: Json = { [INFO]: { name: 'fc', version: '1' } };
  if (c.version !== undefined) meta[PV] = c.version;
  if (c.capabilities !== undefined) meta[CAPS] = c.capabilities;
  if (c.foreign !== undefined) meta['example.com/trace'] = c.framing === 'tooLarge' ? 'x'.repeat(MAX_BODY) : c.foreign;
  if (c.traceparent !== undefined) meta.traceparent = c.traceparent;
  const params: Json = { name: c.tool, _meta: meta };
  if (c.args !== undefined) params.arguments = c.args;
  switch (c.shape) {
    case 'noName':
      delete params.name;
      break;
    case 'numericName':
      params.name = 7;
      break;
    case 'extraKey':
      params.cursor = 'c';
      break;
    case 'requestState':
      params.requestState = 'opaque';
      break;
    case 'inputResponses':
      params.inputResponses = {};
      break;
    case 'task':
      params.task = { ttl: 1000 }; // the 2025-11-25 task augmentation
      break;
    case 'noMeta':
      delete params._meta;
      break;
  }
  if (c.framing === 'deep') params.deep = JSON.parse('['.repeat(80) + ']'.repeat(80)) as unknown;
  const message: Json = { jsonrpc: c.jsonrpc, method: 'tools/call', params };
  if (c.id !== undefined) message.id = c.id;
  let body = JSON.stringify(c.framing === 'batch' ? [message] : message);
  if (c.framing === 'bom') body = `\ufeff${body}`;
  if (c.framing === 'notJson') body = body.slice(0, -1);
  if (c.framing === 'spaced') body = ` \n${body}\n `;

  const headers: Record<string, string> = {};
  if (c.contentType !== null) headers['content-type'] = c.contentType;
  if (c.accept !== null) headers.accept = c.accept;
  if (c.principal !== null) headers.authorization = c.principal;
  const claimed = typeof c.version === 'string' ? c.version : VERSION;
  if (c.versionHeader !== 'absent') headers['mcp-protocol-version'] = c.versionHeader === 'right' ? claimed : '2025-06-18';
  if (c.methodHeader !== 'absent') headers['mcp-method'] = c.methodHeader === 'right' ? 'tools/call' : 'tasks/get';
  if (c.nameHeader === 'right') headers['mcp-name'] = c.tool;
  if (c.nameHeader === 'wrong') headers['mcp-name'] = `${c.tool}x`;
  if (c.nameHeader === 'base64') headers['mcp-name'] = `=?base64?${Buffer.from(c.tool).toString('base64')}?=`;
  if (c.nameHeader === 'badBase64') headers['mcp-name'] = '=?base64?***?=';
  return { headers, body };
}

// ---- the servers and the tasks -----------------------------------------------------------------------------------

describe('HTTP fast lane for tasks/* answers as the SDK path does (differential)', () => {
  let runtime: TaskvisorRuntime;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let laneUrl = '';
  let sdkUrl = '';
  const pool = new Map<State, string>();

  /** Starts a task of `tool` for the owner of `token` and waits until it is `status`. */
  const startTask = async (token: string, tool: string, status: string, args: Json = {}): Promise<string> => {
    const reply = await post(
      sdkUrl,
      {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
        'mcp-protocol-version': VERSION,
        'mcp-method': 'tools/call',
        'mcp-name': tool,
      },
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'create',
        method: 'tools/call',
        params: {
          name: tool,
          arguments: args,
          _meta: { [PV]: VERSION, [CAPS]: { ...TASKS, elicitation: { form: {} } }, [INFO]: { name: 'fc', version: '1' } },
        },
      }),
    );
    const taskId = (JSON.parse(reply.text) as { result?: { taskId?: string } }).result?.taskId;
    assert.ok(taskId, `no task from ${tool}: ${reply.text}`);
    const owner = { id: token === ALICE ? 'alice' : token === BOB ? 'bob' : 'carol' };
    // Generous: the machine is shared and loaded; a task that ends by itself takes ~300 ms.
    await waitFor(async () => (await runtime.getTask(taskId, owner)).status === status, { timeoutMs: 15_000, what: `${tool} ${status}` });
    return taskId;
  };

  before(async () => {
    dir = await tempDir('taskvisor-fast-lane-');
    runtime = createRuntime({
      name: 'taskvisor-fast-lane',
      version: '0.0.0-test',
      store: new MemoryTaskStore(),
      reapIntervalMs: 0,
      finishedRetentionMs: 600_000,
      limits: { maxRequestBodyBytes: MAX_BODY, maxLiveTasksPerPrincipal: MAX_LIVE },
      // The hint of an unfinished task grows with its age, i.e. with the clock (T-27): off, so two answers
      // taken a few ms apart can compare equal.
      // A new task's hint is learnt from the tool's finished runs: never learnt here, so a create on one path
      // and its twin on the other, a finished run apart, get the same hint.
      poll: { growthDivisor: 0, minSamples: Number.MAX_SAFE_INTEGER },
      logger: silentLogger,
    });
    runtime.use(
      ...demoTools,
      ...testTools,
      // Working until cancelled, however long the run takes on a loaded machine (`blocking` gives up after 30 s).
      defineTool('idle', { description: 'Idles until cancelled.' }, async (_args, ctx) => {
        ctx.setStatus('Idle until cancelled');
        // Ends as a cancelled run does: rejecting with the signal's reason.
        return new Promise<string>((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true }),
        );
      }),
    );
    await runtime.start();
    const verifier = await tokenFileVerifier(
      await writeTokenFile(join(dir.path, 'tokens.yaml'), [
        { principal: 'alice', token: ALICE },
        { principal: 'bob', token: BOB },
        { principal: 'carol', token: CAROL },
      ]),
    );
    // One public resource URL, so the two listeners' bearer challenges do not differ by their ports.
    const auth = { verifier, resource: 'https://taskvisor.test/mcp' };
    laneUrl = (await listenHttp(runtime, { port: 0, auth })).url;
    sdkUrl = (await listenHttp(runtime, { port: 0, auth, fastLane: false })).url;
    pool.set('working', await startTask(ALICE, 'idle', 'working'));
    pool.set('input_required', await startTask(ALICE, 'two_inputs', 'input_required'));
    pool.set('completed', await startTask(ALICE, 'always_task', 'completed', { ms: 0 }));
    pool.set('failed', await startTask(ALICE, 'slow_fail', 'failed'));
    const cancelled = await startTask(ALICE, 'idle', 'working');
    await runtime.cancelTask(cancelled, { id: 'alice' });
    await waitFor(async () => (await runtime.getTask(cancelled, { id: 'alice' })).status === 'cancelled', { timeoutMs: 15_000 });
    pool.set('cancelled', cancelled);
    pool.set('unknown', 'f'.repeat(32));
    pool.set('foreign', await startTask(BOB, 'idle', 'working'));
    for (let held = 0; held < MAX_LIVE; held++) await startTask(CAROL, 'idle', 'working');
  });

  after(async () => {
    await runtime?.close();
    await dir?.remove();
  });

  it('gives the same status, headers and JSON body with the lane on and off, for generated valid and invalid requests', async (t) => {
    let laneAnswers = 0;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        runs++;
        // update/cancel may change a live task: each path then gets its own twin task in the same state (the
        // twin's id is blanked where an answer quotes it). Every other request reads the shared, unchanging pool.
        const live = c.state === 'working' || c.state === 'input_required' || c.state === 'foreign';
        const mutates = live && (c.method === 'tasks/update' || c.method === 'tasks/cancel');
        const twin = async () => {
          const token = c.state === 'foreign' ? BOB : ALICE;
          return c.state === 'input_required' ? startTask(token, 'two_inputs', 'input_required') : startTask(token, 'idle', 'working');
        };
        const [laneTask, sdkTask] = mutates ? [await twin(), await twin()] : [pool.get(c.state)!, pool.get(c.state)!];
        const viaLane = requestOf(c, laneTask);
        const viaSdk = requestOf(c, sdkTask);
        const sdkReply = await post(sdkUrl, viaSdk.headers, viaSdk.body);
        const laneReply = await post(laneUrl, viaLane.headers, viaLane.body);
        if (answeredByLane(laneReply)) laneAnswers++;
        const [lane, sdk] = mutates
          ? [comparable(laneReply, laneTask), comparable(sdkReply, sdkTask)]
          : [comparable(laneReply), comparable(sdkReply)];
        assert.deepEqual(
          lane,
          sdk,
          `lane ${JSON.stringify(lane)}\n  vs SDK path ${JSON.stringify(sdk)}\n  for ${viaLane.body.slice(0, 400)}`,
        );
        if (mutates)
          await Promise.all(
            [laneTask, sdkTask].map((taskId) => runtime.cancelTask(taskId, { id: c.state === 'foreign' ? 'bob' : 'alice' })),
          );
      }),
      { numRuns: NUM_RUNS, includeErrorInReport: true },
    );
    // Not a vacuous proof: a good share of the generated requests were answered by the lane itself.
    assert.ok(laneAnswers >= runs / 20, `the lane answered only ${laneAnswers} of ${runs} requests`);
    t.diagnostic(`the lane answered ${laneAnswers} of ${runs} requests itself`);
  });

  it('answers generated tools/call requests (creates, bad arguments, unknown tools, limits) as the SDK path does', async (t) => {
    let laneAnswers = 0;
    let laneCreates = 0;
    const laneKinds = new Set<string>();
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(callArb, async (c) => {
        runs++;
        const request = callOf(c);
        const sdkReply = await post(sdkUrl, request.headers, request.body);
        const laneReply = await post(laneUrl, request.headers, request.body);
        if (answeredByLane(laneReply)) {
          laneAnswers++;
          const answer = JSON.parse(laneReply.text) as { result?: Json; error?: { data?: { limit?: string } } };
          if (answer.result?.resultType === 'task') laneCreates++;
          else if (answer.error?.data?.limit) laneKinds.add(`limit ${answer.error.data.limit}`);
          else if (laneReply.text.includes('Unknown tool')) laneKinds.add('unknown tool');
          else if (laneReply.text.includes('rguments')) laneKinds.add('invalid arguments');
        }
        const [lane, sdk] = [comparable(laneReply), comparable(sdkReply)];
        assert.deepEqual(
          lane,
          sdk,
          `lane ${JSON.stringify(lane)}\n  vs SDK path ${JSON.stringify(sdk)}\n  for ${request.body.slice(0, 400)}`,
        );
      }),
      { numRuns: NUM_RUNS, includeErrorInReport: true },
    );
    // Not a vacuous proof: the lane itself answered a good share, creates among them.
    assert.ok(laneAnswers >= runs / 10, `the lane answered only ${laneAnswers} of ${runs} calls`);
    assert.ok(laneCreates >= runs / 20, `the lane created only ${laneCreates} tasks in ${runs} calls`);
    assert.deepEqual(
      [...laneKinds].sort(),
      ['invalid arguments', 'limit maxLiveTasksPerPrincipal', 'unknown tool'],
      'errors the lane answered',
    );
    t.diagnostic(
      `the lane answered ${laneAnswers} of ${runs} calls itself, ${laneCreates} of them creates; errors: ${[...laneKinds].join(', ')}`,
    );
  });

  it('answers a create with a task that is stored before the answer leaves (I-1) and runs as one made on the SDK path', async () => {
    const request = callOf({
      principal: `Bearer ${ALICE}`,
      tool: 'always_task',
      args: { ms: 0 },
      id: 1,
      jsonrpc: '2.0',
      version: VERSION,
      capabilities: TASKS,
      foreign: undefined,
      traceparent: undefined,
      shape: 'ok',
      versionHeader: 'right',
      methodHeader: 'right',
      nameHeader: 'right',
      contentType: 'application/json',
      accept: 'application/json, text/event-stream',
      framing: 'plain',
    });
    const reply = await post(laneUrl, request.headers, request.body);
    assert.ok(answeredByLane(reply), reply.text);
    const taskId = (JSON.parse(reply.text) as { result: { taskId: string } }).result.taskId;
    // Read from the store, not from the live actor: the record was durable when the answer was written.
    assert.equal((await runtime.store.get(taskId))?.tool, 'always_task');
    await waitFor(async () => (await runtime.getTask(taskId, { id: 'alice' })).status === 'completed', { timeoutMs: 15_000 });
  });

  it('reads a chunked body (no Content-Length) the same way, also past the size limit, where the SDK path gets the rest of the stream', async () => {
    const taskId = pool.get('completed')!;
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${ALICE}`,
      'mcp-protocol-version': VERSION,
      'mcp-method': 'tasks/get',
      'mcp-name': taskId,
      'transfer-encoding': 'chunked',
    };
    const message = (pad: string) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tasks/get',
        params: { taskId, _meta: { [PV]: VERSION, [CAPS]: TASKS, [INFO]: { name: 'fc', version: '1' }, 'example.com/pad': pad } },
      });
    const inChunks = (text: string, size: number) =>
      Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));
    for (const [what, text] of [
      ['a small body in 7-byte chunks', message('')],
      ['a body past the size limit in 1 KiB chunks', message('x'.repeat(2 * MAX_BODY))],
    ] as const) {
      const sdkReply = await post(sdkUrl, headers, inChunks(text, what.startsWith('a small') ? 7 : 1024));
      const laneReply = await post(laneUrl, headers, inChunks(text, what.startsWith('a small') ? 7 : 1024));
      assert.deepEqual(comparable(laneReply), comparable(sdkReply), `${what}: lane ${laneReply.text}\n  vs SDK path ${sdkReply.text}`);
      assert.equal(laneReply.status, what.startsWith('a small') ? 200 : 413, `${what}: ${laneReply.text}`);
      // The small one is the lane's own answer; the large one is the SDK path's 413, after the replayed body.
      assert.equal(answeredByLane(laneReply), what.startsWith('a small'), what);
    }
  });
});
