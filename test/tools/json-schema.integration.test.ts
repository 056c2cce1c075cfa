/**
 * Tools described by JSON Schema: published unchanged
 * (`$schema`, `$defs`, `$ref` kept), arguments checked by Ajv in the schema's
 * dialect, `structuredContent` checked against `outputSchema` (JSON Schema or
 * zod) — through real Streamable HTTP with a 2026-07-28 client and a v1 client.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { z } from 'zod';
import { createRuntime, defineTool, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, type HttpListener } from '../../src/transports/index.js';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { errorOf, rawRequest, resultOf, tempDir } from '../support/processes.js';

const NO_TASKS = {};

/** A 2020-12 schema with $defs and $ref, as a client generator would write it. */
const ORDER_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: {
    item: {
      type: 'object',
      properties: { sku: { type: 'string', pattern: '^[A-Z]{3}-\\d+$' }, quantity: { type: 'integer', minimum: 1 } },
      required: ['sku', 'quantity'],
      additionalProperties: false,
    },
  },
  properties: {
    customer: { type: 'string', format: 'email' },
    items: { type: 'array', items: { $ref: '#/$defs/item' }, minItems: 1 },
  },
  required: ['customer', 'items'],
  additionalProperties: false,
};

const TOTAL_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: { lines: { type: 'integer' }, units: { type: 'integer' } },
  required: ['lines', 'units'],
};

const DRAFT7_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  definitions: { word: { type: 'string', minLength: 2 } },
  properties: { word: { $ref: '#/definitions/word' } },
  required: ['word'],
};

const tools = [
  defineTool('place_order', { inputSchema: ORDER_SCHEMA, outputSchema: TOTAL_SCHEMA, taskBehavior: 'never' }, async (args) => {
    const items = args.items as Array<{ quantity: number }>;
    const total = { lines: items.length, units: items.reduce((sum, item) => sum + item.quantity, 0) };
    return { content: [{ type: 'text', text: JSON.stringify(total) }], structuredContent: total };
  }),
  defineTool('shout', { inputSchema: DRAFT7_SCHEMA, taskBehavior: 'never' }, async (args) => String(args.word).toUpperCase()),
  defineTool(
    'broken_output',
    { inputSchema: { type: 'object', properties: { give: { type: 'string' } } }, outputSchema: TOTAL_SCHEMA, taskBehavior: 'never' },
    async (args) =>
      args.give === 'nothing'
        ? 'no structured content at all'
        : args.give === 'error'
          ? { content: [{ type: 'text', text: 'failed politely' }], isError: true }
          : { content: [{ type: 'text', text: '{}' }], structuredContent: { lines: 'many' } },
  ),
  defineTool('zod_output', { outputSchema: z.object({ ok: z.boolean() }), taskBehavior: 'never' }, async () => ({
    content: [{ type: 'text', text: 'x' }],
    structuredContent: { ok: 'yes' },
  })),
];

describe('tools described by JSON Schema', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let runtime: TaskvisorRuntime;
  let http: HttpListener;
  let client: ConnectedClient;
  const call = async (name: string, args: unknown) =>
    rawRequest(client, { method: 'tools/call', params: { name, arguments: args, _meta: envelope(NO_TASKS) } });

  before(async () => {
    dir = await tempDir('taskvisor-jsonschema-');
    runtime = createRuntime({ store: { kind: 'memory' }, stateFile: join(dir.path, 'state.json'), logger: silentLogger });
    runtime.use(...tools);
    await runtime.start();
    http = await listenHttp(runtime, { port: 0 });
    client = await connect({ kind: 'http', url: http.url }, NO_TASKS);
  });
  after(async () => {
    await client?.close();
    await runtime?.close();
    await dir?.remove();
  });

  it('tools/list publishes the JSON Schema unchanged: $schema, $defs and $ref kept', async () => {
    const { tools: listed } = await client.client.listTools();
    const order = listed.find((tool) => tool.name === 'place_order')!;
    assert.deepEqual(order.inputSchema, ORDER_SCHEMA);
    assert.deepEqual(order.outputSchema, TOTAL_SCHEMA);
    assert.deepEqual(listed.find((tool) => tool.name === 'shout')!.inputSchema, DRAFT7_SCHEMA);
  });

  it('valid arguments reach the tool; its structuredContent matches the outputSchema', async () => {
    const result = resultOf(
      await call('place_order', {
        customer: 'ada@example.com',
        items: [
          { sku: 'ABC-1', quantity: 2 },
          { sku: 'XYZ-9', quantity: 3 },
        ],
      }),
    );
    assert.deepEqual(result.structuredContent, { lines: 2, units: 5 });
  });

  it('invalid arguments are -32602 naming every problem, through $ref, format and additionalProperties', async () => {
    const error = errorOf(await call('place_order', { customer: 'not-an-email', items: [{ sku: 'abc', quantity: 0, colour: 'red' }] }));
    assert.equal(error.code, -32602);
    assert.match(error.message, /^Invalid arguments for tool place_order: /);
    assert.match(error.message, /customer: must match format "email"/);
    assert.match(error.message, /items\.0\.sku: must match pattern/);
    assert.match(error.message, /items\.0\.quantity: must be >= 1/);
    assert.match(error.message, /items\.0: must NOT have additional properties \(colour\)/);
    const missing = errorOf(await call('place_order', {}));
    assert.match(missing.message, /\(root\): must have required property 'customer'/);
  });

  it('a draft-07 schema is checked as draft-07 (definitions, $ref)', async () => {
    assert.deepEqual(resultOf(await call('shout', { word: 'hey' })).content, [{ type: 'text', text: 'HEY' }]);
    assert.match(errorOf(await call('shout', { word: 'h' })).message, /word: must NOT have fewer than 2 characters/);
  });

  it('structuredContent that does not match the outputSchema fails the call; an isError result is exempt', async () => {
    const wrong = errorOf(await call('broken_output', { give: 'wrong' }));
    assert.equal(wrong.code, -32603);
    assert.match(wrong.message, /broken_output returned structuredContent that does not match its outputSchema: .*lines: must be integer/);
    assert.match(errorOf(await call('broken_output', { give: 'nothing' })).message, /structuredContent is missing/);
    const polite = resultOf(await call('broken_output', { give: 'error' }));
    assert.equal(polite.isError, true);
    assert.match(
      errorOf(await call('zod_output', {})).message,
      /zod_output returned structuredContent that does not match its outputSchema: ok:/,
    );
  });

  it('a v1 (2025-11-25) client sees the same schema and the same refusal', async () => {
    const legacy = new V1Client({ name: 'legacy', version: '1.0.0' });
    await legacy.connect(new V1HttpTransport(new URL(http.url)));
    try {
      const { tools: listed } = await legacy.listTools();
      assert.deepEqual(listed.find((tool) => tool.name === 'place_order')!.inputSchema, ORDER_SCHEMA);
      await assert.rejects(
        legacy.callTool({ name: 'place_order', arguments: { customer: 'ada@example.com', items: [] } }),
        /items: must NOT have fewer than 1 items/,
      );
    } finally {
      await legacy.close();
    }
  });

  it('a schema that is not valid JSON Schema is refused at registration, naming the tool and the field', () => {
    assert.throws(
      () =>
        runtime.use(
          defineTool('bad_schema', { inputSchema: { type: 'object', properties: { a: { type: 'nonsense' } } } }, async () => 'x'),
        ),
      /Tool "bad_schema": inputSchema is not a valid JSON Schema/,
    );
    assert.throws(
      () => runtime.use(defineTool('not_object', { inputSchema: { type: 'string' } }, async () => 'x')),
      /Tool "not_object": inputSchema must describe an object/,
    );
  });
});
