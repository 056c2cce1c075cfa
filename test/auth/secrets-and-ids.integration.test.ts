/**
 * T-09: task ids come from the CSPRNG with at least 122 bits (UUIDv4's
 * figure; ours are 128), are header-safe (valid `Mcp-Name` values with no
 * Base64 sentinel, T-61) and show no structure (no counter, timestamp or
 * constant part). And the log scrubber that keeps client-sent text out of
 * the transport error lines.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newTaskId } from '../../src/core/ids.js';
import { scrubErrorText, logTransportError } from '../../src/transports/transportErrors.js';
import { listenHttp } from '../../src/transports/index.js';
import { type TaskvisorRuntime } from '../../src/index.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { postJsonRpc } from '../support/httpRaw.js';
import { taskOps } from '../support/taskOps.js';
import { startE2eRuntime } from '../e2e/fixtures/runtime.js';

/** RFC 9110 field-value characters that need no quoting or encoding, and no Base64 sentinel prefix (T-61). */
const HEADER_SAFE = /^[A-Za-z0-9_-]+$/;

describe('task ids (T-09)', () => {
  let runtime: TaskvisorRuntime;
  let client: ConnectedClient;
  let url = '';
  before(async () => {
    runtime = await startE2eRuntime();
    url = (await listenHttp(runtime, { port: 0 })).url;
    client = await connect({ kind: 'http', url });
  });
  after(async () => {
    await client.close();
    await runtime.close();
  });

  it('ids of created tasks are 32 lowercase hex digits (128 bits ≥ 122), header-safe, distinct, and usable as Mcp-Name', async () => {
    const ops = taskOps(() => client);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await ops.createTask('always_task', { ms: 0 })).taskId);
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids) {
      assert.match(id, /^[0-9a-f]{32}$/);
      assert.match(id, HEADER_SAFE);
      assert.ok(!id.startsWith('=?base64?'));
      assert.ok(Math.log2(16) * id.length >= 122);
    }
    // The SDK client derives Mcp-Name from the id as-is: the header round-trips.
    const reply = await postJsonRpc(url, 'tasks/get', { taskId: ids[0]! });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.message?.result?.taskId, ids[0]);
  });

  it('the generator shows no structure: every hex position takes many values, digits are uniform (loose bounds)', () => {
    const ids = Array.from({ length: 4000 }, () => newTaskId());
    assert.equal(new Set(ids).size, ids.length);
    for (let position = 0; position < 32; position++) {
      const seen = new Set(ids.map((id) => id[position]));
      // A timestamp, counter or version nibble would pin a position to few values.
      assert.equal(seen.size, 16, `position ${position} takes only ${seen.size} values`);
    }
    const counts = new Map<string, number>();
    for (const id of ids) for (const digit of id) counts.set(digit, (counts.get(digit) ?? 0) + 1);
    const expected = (ids.length * 32) / 16; // 8000 per digit
    // ±10 % is > 10 standard deviations (σ ≈ 87): fails only for a biased generator.
    for (const [digit, count] of counts)
      assert.ok(Math.abs(count - expected) < expected * 0.1, `digit ${digit}: ${count} (expected ≈ ${expected})`);
  });
});

describe('transport error lines keep client text out of the log', () => {
  it('quoted parts are cut, control characters dropped, length bounded', () => {
    assert.equal(
      scrubErrorText(new Error('Bad Request: the body carries params.name="echo" but the Mcp-Name header names "Bearer abc123"')),
      'Bad Request: the body carries params.name="…" but the Mcp-Name header names "…"',
    );
    let parse: unknown;
    try {
      JSON.parse('{"token":"sekret-value"');
    } catch (error) {
      parse = error;
    }
    assert.ok(!scrubErrorText(parse).includes('sekret'), scrubErrorText(parse));
    assert.ok(!scrubErrorText(new Error('line1\nforged log line\r\n')).includes('\n'));
    assert.ok(scrubErrorText(new Error('x'.repeat(5000))).length <= 201);
  });

  it('a request the SDK rejected is one info line naming the rule only', () => {
    const lines: string[] = [];
    const logger = {
      info: (m: string) => lines.push(`info ${m}`),
      error: (m: string, e?: unknown) => lines.push(`error ${m} ${String(e)}`),
    };
    logTransportError(logger, 'http', new Error('Rejected inbound request (name-header-mismatch): Bad Request: names "secret"'));
    logTransportError(logger, 'stdio', new Error('Unexpected token \'p\', "payload" is not valid JSON'));
    assert.deepEqual(lines, [
      'info http: rejected a malformed request (name-header-mismatch)',
      `error stdio Unexpected token '…', "…" is not valid JSON`,
    ]);
  });
});
