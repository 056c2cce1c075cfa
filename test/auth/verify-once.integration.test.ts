/**
 * One token verification per HTTP request (I-7, T-10): the inbound-body gate
 * authenticates a POST's head to decide whose budget pays, and the fast lane
 * and admission behind it use that outcome instead of verifying the token
 * again (with a JWT verifier each verification is a signature check).
 * Counted at the verifier, over real HTTP, on the fast lane and on the SDK
 * path, for accepted and refused tokens.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { InvalidTokenError, type TokenVerifier } from '../../src/auth/index.js';
import { postJsonRpc } from '../support/httpRaw.js';
import { unknownTaskId } from '../support/taskOps.js';

const TOKEN = 'alice-token-0123456789abcdef';

describe('bearer auth: one verification per HTTP request', () => {
  let runtime: TaskvisorRuntime;
  let laneUrl = '';
  let sdkUrl = '';
  let verifications = 0;
  const verifier: TokenVerifier = {
    verify(token) {
      verifications++;
      return token === TOKEN ? Promise.resolve({ principal: { id: 'alice' } }) : Promise.reject(new InvalidTokenError('unknown token'));
    },
  };
  const headers = (token: string) => ({ authorization: `Bearer ${token}` });
  /** The verifications `send` caused. */
  const counted = async (send: () => Promise<unknown>): Promise<number> => {
    const before = verifications;
    await send();
    return verifications - before;
  };

  before(async () => {
    runtime = createRuntime({ name: 'verify-once', store: new MemoryTaskStore(), reapIntervalMs: 0, logger: silentLogger });
    runtime.tool('hold', { inputSchema: z.object({}), taskBehavior: 'always' }, async (_args, ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      return 'stopped';
    });
    await runtime.start();
    laneUrl = (await listenHttp(runtime, { port: 0, auth: { verifier } })).url;
    sdkUrl = (await listenHttp(runtime, { port: 0, auth: { verifier }, fastLane: false })).url;
  });
  after(() => runtime.close());

  for (const [path, url] of [
    ['fast lane', () => laneUrl],
    ['SDK path', () => sdkUrl],
  ] as const) {
    it(`${path}: a task-creating tools/call and a tasks/get each verify the token once`, async () => {
      let taskId: unknown;
      const create = await counted(async () => {
        const reply = await postJsonRpc(url(), 'tools/call', { name: 'hold', arguments: {} }, { headers: headers(TOKEN) });
        assert.equal(reply.status, 200, reply.text);
        taskId = reply.message?.result?.taskId;
      });
      assert.equal(typeof taskId, 'string');
      assert.equal(create, 1);
      const get = await counted(async () => {
        const reply = await postJsonRpc(url(), 'tasks/get', { taskId }, { headers: headers(TOKEN) });
        assert.equal(reply.status, 200, reply.text);
        assert.equal(reply.message?.result?.taskId, taskId);
      });
      assert.equal(get, 1);
      await counted(() => postJsonRpc(url(), 'tasks/cancel', { taskId }, { headers: headers(TOKEN) }));
    });

    it(`${path}: a refused token is verified once and answered 401 invalid_token`, async () => {
      const refused = await counted(async () => {
        const reply = await postJsonRpc(url(), 'tasks/get', { taskId: unknownTaskId() }, { headers: headers('not-a-known-token') });
        assert.equal(reply.status, 401, reply.text);
      });
      assert.equal(refused, 1);
    });
  }
});
