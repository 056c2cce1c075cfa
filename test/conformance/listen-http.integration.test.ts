/**
 * Conformance: `subscriptions/listen` over Streamable HTTP goes through the
 * same header ladder as every other modern request POST (T-63, §4.5, §2.4).
 * taskvisor answers listen itself (the SDK router strips `taskIds`, P8), so
 * these cases compare the listen answer with what the SDK answers for a
 * `tasks/get` with the same defect, over real HTTP with raw JSON-RPC (the
 * ext-tasks client cannot send a malformed request).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listenHttp } from '../../src/transports/index.js';
import { type TaskvisorRuntime } from '../../src/index.js';
import { startE2eRuntime } from '../e2e/fixtures/runtime.js';
import { envelope } from '../support/extTasksClient.js';
import { standardHeaders } from '../support/httpRaw.js';

type Json = Record<string, any>;

let runtime: TaskvisorRuntime;
let url = '';
let counter = 0;

before(async () => {
  runtime = await startE2eRuntime();
  url = (await listenHttp(runtime, { port: 0 })).url;
});
after(() => runtime.close());

/**
 * POSTs `method` with header overrides (`null` removes one) and reads the
 * status, the content type and, for a JSON reply, the body. An SSE reply (a
 * listen stream that was wrongly opened) is cancelled, not read to its end.
 */
async function send(
  method: string,
  params: Json,
  overrides: Record<string, string | null>,
): Promise<{ status: number; contentType: string; body?: Json }> {
  const fullParams = { ...params, _meta: envelope() };
  const headers = standardHeaders(method, fullParams);
  for (const [name, value] of Object.entries(overrides)) {
    if (value === null) delete headers[name];
    else headers[name] = value;
  }
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: `conf-listen:${++counter}`, method, params: fullParams }),
  });
  const contentType = response.headers.get('content-type') ?? '';
  if (contentType.includes('text/event-stream')) {
    await response.body?.cancel();
    return { status: response.status, contentType };
  }
  const text = await response.text();
  return { status: response.status, contentType, ...(text ? { body: JSON.parse(text) as Json } : {}) };
}

describe('listen over HTTP: the standard-header ladder (T-63, §4.5)', () => {
  const listenParams = { notifications: { taskIds: ['0123456789abcdef0123456789abcdef'], toolsListChanged: true } };

  it('a listen without MCP-Protocol-Version is HTTP 400 with -32020, as tasks/get is', async () => {
    const reference = await send('tasks/get', { taskId: '0123456789abcdef0123456789abcdef' }, { 'mcp-protocol-version': null });
    assert.equal(reference.status, 400);
    assert.equal(reference.body?.error?.code, -32020);

    const listen = await send('subscriptions/listen', listenParams, { 'mcp-protocol-version': null });
    assert.equal(listen.status, 400, `expected a 400 JSON error, got ${listen.status} ${listen.contentType}`);
    assert.equal(listen.body?.error?.code, -32020);
    assert.match(String(listen.body?.error?.message), /MCP-Protocol-Version header is absent/);
    assert.deepEqual(listen.body?.error?.data, { mismatch: { header: '(missing)', body: reference.body?.error?.data?.mismatch?.body } });
    assert.equal(listen.body?.id, `conf-listen:${counter}`);
  });

  it('a listen whose Content-Type is not JSON is HTTP 415, as tasks/get is', async () => {
    const reference = await send('tasks/get', { taskId: '0123456789abcdef0123456789abcdef' }, { 'content-type': 'text/plain' });
    assert.equal(reference.status, 415);

    const listen = await send('subscriptions/listen', listenParams, { 'content-type': 'text/plain' });
    assert.equal(listen.status, 415, `expected 415, got ${listen.status} ${listen.contentType}`);
    assert.deepEqual(listen.body, reference.body);
  });

  it('an unsupported version without the header still gets -32022 first (the SDK order)', async () => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-method': 'subscriptions/listen' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'conf-listen:version',
        method: 'subscriptions/listen',
        params: { ...listenParams, _meta: { ...envelope(), 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } },
      }),
    });
    assert.equal(response.status, 400);
    const body = (await response.json()) as Json;
    assert.equal(body.error.code, -32022);
    assert.deepEqual(body.error.data, { supported: ['2026-07-28'], requested: '2099-01-01' });
  });

  it('with every header right, the stream opens and the acknowledgement comes first', async () => {
    const fullParams = { notifications: { toolsListChanged: true }, _meta: envelope() };
    const abort = new AbortController();
    const response = await fetch(url, {
      method: 'POST',
      headers: standardHeaders('subscriptions/listen', fullParams),
      body: JSON.stringify({ jsonrpc: '2.0', id: 'conf-listen:ok', method: 'subscriptions/listen', params: fullParams }),
      signal: abort.signal,
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /text\/event-stream/);
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes('\n\n')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    abort.abort();
    const first = JSON.parse(
      text
        .split('\n')
        .find((line) => line.startsWith('data:'))!
        .slice(5),
    ) as Json;
    assert.equal(first.method, 'notifications/subscriptions/acknowledged');
    assert.equal(first.params._meta['io.modelcontextprotocol/subscriptionId'], 'conf-listen:ok');
    assert.deepEqual(first.params.notifications, { toolsListChanged: true });
  });
});
