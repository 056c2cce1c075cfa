/**
 * The cross-principal matrix (T-10, I-7, D-11): principal B, holding a real
 * bearer token, tries every task operation on A's tasks over Streamable HTTP
 * and WebSocket, with token-file and JWT authentication. Every answer must
 * equal, field for field (JSON-RPC code, message, data; HTTP status; the
 * listen acknowledgement and result), the answer for an id nobody issued —
 * and A's task must be exactly as before (status, lastUpdatedAt, input
 * requests, result), then still drivable by A.
 *
 * No timing assertion: the server makes "foreign" and "unknown" the same
 * code path (TaskSupervisor.get/update/cancel fall through to one store
 * lookup that throws the one taskNotFound(); the hub filters listen taskIds
 * by owner the same way), which the equal answers observe.
 *
 * The tables are meant to grow: TASK_ROWS holds local tasks in each state
 * and a wrapped upstream id (the runtime aggregates the demo tools as a
 * stdio child), OPERATIONS any new task method.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import demoTools from '../../examples/demo/tools.js';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { jwtVerifier, tokenFileVerifier, type BearerAuthOptions } from '../../src/auth/index.js';
import { listenHttp, listenWebSocket } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { testTools } from '../e2e/fixtures/testTools.js';
import { startIssuer, writeTokenFile, type Issuer } from '../support/authFixtures.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { collectListen, postJsonRpc } from '../support/httpRaw.js';
import { tempDir } from '../support/processes.js';
import { stdioDemoSpec, UPSTREAM_READY_MS } from '../aggregator/harness.js';
import { result_, taskOps, textOf, type Json } from '../support/taskOps.js';

type Ops = ReturnType<typeof taskOps>;
type TransportKind = 'http' | 'ws';

/** A signed-in principal on one transport. */
interface Caller {
  ops: Ops;
  connected: ConnectedClient;
  headers: Record<string, string>;
  url: string;
  transport: TransportKind;
}

/** One kind of task A owns: how to create it, and how A finishes it afterwards (proving it still works). */
interface TaskRow {
  label: string;
  create(owner: Caller): Promise<string>;
  finish(owner: Caller, taskId: string): Promise<void>;
}

/** One operation B attempts; the observation is everything B can see of the answer. */
interface OperationRow {
  name: string;
  attempt(intruder: Caller, taskId: string): Promise<unknown>;
}

const MALLORY = { name: { action: 'accept', content: { name: 'Mallory' } } };

const TASK_ROWS: TaskRow[] = [
  {
    label: 'working (live actor)',
    create: async (owner) => (await owner.ops.createTask('blocking')).taskId,
    finish: async (owner, taskId) => {
      result_(await owner.ops.cancel(taskId));
      await owner.ops.waitForStatus(taskId, 'cancelled');
    },
  },
  {
    label: 'input_required (live actor)',
    create: async (owner) => {
      const { taskId } = await owner.ops.createTask('hello_world');
      await owner.ops.waitForStatus(taskId, 'input_required');
      return taskId;
    },
    finish: async (owner, taskId) => {
      result_(await owner.ops.update(taskId, { name: { action: 'accept', content: { name: 'Luca' } } }));
      const { task } = await owner.ops.waitForStatus(taskId, 'completed');
      assert.equal(textOf(task.result), 'Hello, Luca!', 'only the owner answered');
    },
  },
  {
    label: 'completed (served from the store)',
    create: async (owner) => {
      const { taskId } = await owner.ops.createTask('always_task', { ms: 0 });
      await owner.ops.waitForStatus(taskId, 'completed');
      return taskId;
    },
    finish: async (owner, taskId) => {
      assert.equal(textOf((await owner.ops.task(taskId)).result), 'always done');
    },
  },
  {
    // The aggregator's wrapped ids (MAC over upstream, id and principal): B gets what an unissued local id gets.
    label: 'wrapped upstream (forwarded to the demo upstream)',
    create: async (owner) => {
      const { taskId } = await owner.ops.createTask('x_demo_sleep', { ms: 600_000 });
      assert.match(taskId, /^demo\./, `a wrapped id: ${taskId}`);
      return taskId;
    },
    finish: async (owner, taskId) => {
      result_(await owner.ops.cancel(taskId));
      await owner.ops.waitForStatus(taskId, 'cancelled', 20_000);
    },
  },
];

/** The JSON-RPC answer with what the transport adds (HTTP status) — nothing about which id was asked. */
const OPERATIONS: OperationRow[] = [
  ...(['tasks/get', 'tasks/update', 'tasks/cancel'] as const).map((method) => ({
    name: method,
    async attempt(intruder: Caller, taskId: string) {
      const params: Json = method === 'tasks/update' ? { taskId, inputResponses: MALLORY } : { taskId };
      if (intruder.transport === 'http') {
        const reply = await postJsonRpc(intruder.url, method, params, { headers: intruder.headers });
        return { httpStatus: reply.status, error: reply.message?.error, result: reply.message?.result };
      }
      return intruder.ops.send(method, params);
    },
  })),
  {
    name: 'subscriptions/listen (taskIds)',
    async attempt(intruder, taskId) {
      if (intruder.transport === 'http') {
        const { status, messages, id } = await collectListen(
          intruder.url,
          { taskIds: [taskId] },
          { headers: intruder.headers, forMs: 2000 },
        );
        // The request id and the subscription id differ per request by design; everything else must match.
        return { status, messages: JSON.parse(JSON.stringify(messages).replaceAll(id, '<id>')) as unknown };
      }
      const before = intruder.connected.received.length;
      const subscription = await intruder.connected.client.listen({ taskIds: [taskId] } as never);
      const closed = await subscription.closed;
      const seen = intruder.connected.received.slice(before) as Json[];
      const ack = seen.find((message) => message.method === 'notifications/subscriptions/acknowledged');
      assert.ok(ack, JSON.stringify(seen));
      return {
        acknowledged: ((ack.params as Json).notifications as Json).taskIds ?? [],
        closed,
        pushed: seen.filter((m) => m.method === 'notifications/tasks'),
      };
    },
  },
];

/** What A sees of its task: must not move while B tries things. */
const ownerView = (task: Json) => ({
  status: task.status,
  lastUpdatedAt: task.lastUpdatedAt,
  statusMessage: task.statusMessage,
  inputRequests: task.inputRequests,
  result: task.result,
  error: task.error,
});

/** An id of the same shape as real ones that nobody issued. */
const unissuedId = () => randomBytes(16).toString('hex');

interface AuthRow {
  label: string;
  /** Bearer options and a token for each of A and B. */
  setup(dir: string): Promise<{ auth: BearerAuthOptions; alice: string; bob: string }>;
}

describe("cross-principal matrix: B on A's tasks is indistinguishable from an unknown id (T-10, I-7)", () => {
  let runtime: TaskvisorRuntime;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let issuer: Issuer;
  const clients: ConnectedClient[] = [];

  const AUTH_ROWS: AuthRow[] = [
    {
      label: 'token file',
      setup: async (path) => {
        const alice = randomBytes(32).toString('base64url');
        const bob = randomBytes(32).toString('base64url');
        const file = await writeTokenFile(join(path, 'tokens.yaml'), [
          { principal: 'alice', token: alice },
          { principal: 'bob', token: bob },
        ]);
        return { auth: { verifier: await tokenFileVerifier(file) }, alice, bob };
      },
    },
    {
      label: 'JWT (JWKS)',
      setup: async () => {
        const verifier = await jwtVerifier({ jwksUrl: issuer.jwksUrl, issuer: issuer.issuer, audience: 'taskvisor-matrix' });
        return {
          auth: { verifier },
          alice: await issuer.sign({ sub: 'alice' }, { expiresIn: '1h' }),
          bob: await issuer.sign({ sub: 'bob' }, { expiresIn: '1h' }),
        };
      },
    },
  ];

  before(async () => {
    dir = await tempDir('taskvisor-matrix-');
    issuer = await startIssuer('taskvisor-matrix');
    runtime = createRuntime({
      name: 'taskvisor-matrix',
      store: new MemoryTaskStore(),
      pollIntervalMs: 50,
      promoteAfterMs: 150,
      reapIntervalMs: 0,
      finishedRetentionMs: 10 * 60_000,
      logger: silentLogger,
      stateFile: join(dir.path, 'runtime-state.json'),
      upstreams: [stdioDemoSpec(dir.path)],
    });
    runtime.use(...demoTools, ...testTools);
    await runtime.start();
    await runtime.upstreams!.waitFor('demo', (status) => status.state === 'ready', UPSTREAM_READY_MS);
  });
  after(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await runtime.close();
    await issuer.close();
    await dir.remove();
  });

  for (const authRow of AUTH_ROWS) {
    for (const transport of ['http', 'ws'] as const) {
      describe(`${authRow.label} over ${transport === 'http' ? 'Streamable HTTP' : 'WebSocket'}`, () => {
        let alice: Caller;
        let bob: Caller;
        before(async () => {
          const { auth, alice: aliceToken, bob: bobToken } = await authRow.setup(dir.path);
          const url =
            transport === 'http'
              ? (await listenHttp(runtime, { port: 0, auth })).url
              : (await listenWebSocket(runtime, { port: 0, auth })).url;
          const signIn = async (token: string): Promise<Caller> => {
            const headers = { authorization: `Bearer ${token}` };
            const connected = await connect({ kind: transport, url, headers });
            clients.push(connected);
            return { ops: taskOps(() => connected), connected, headers, url, transport };
          };
          alice = await signIn(aliceToken);
          bob = await signIn(bobToken);
        });

        for (const row of TASK_ROWS) {
          it(`A's ${row.label} task`, async () => {
            const taskId = await row.create(alice);
            const before = ownerView(await alice.ops.task(taskId));
            for (const operation of OPERATIONS) {
              const foreign = await operation.attempt(bob, taskId);
              const unknown = await operation.attempt(bob, unissuedId());
              assert.deepEqual(foreign, unknown, `${operation.name}: B on A's task answered differently from an unknown id`);
              if (operation.name !== 'subscriptions/listen (taskIds)') {
                const error = (foreign as { error?: { code: number } }).error;
                assert.equal(error?.code, -32602, `${operation.name}: ${JSON.stringify(foreign)}`);
              }
            }
            assert.deepEqual(ownerView(await alice.ops.task(taskId)), before, "A's task moved while B tried it");
            await row.finish(alice, taskId);
            // B heard nothing about it, even on its open connection.
            const leaked = (bob.connected.received as Json[]).filter((message) => JSON.stringify(message).includes(taskId));
            assert.deepEqual(leaked, []);
          });
        }
      });
    }
  }
});
