/**
 * Upstream resources, resource templates and prompts forwarded by the
 * aggregator, against the real server-everything (stdio
 * child): URIs behind the upstream's scheme prefix
 * (`x-everything+<uri>`, reversible), prompts named like tools
 * (`x_everything_<prompt>`), reads, gets and completions forwarded with the
 * upstream's own names and answered with ours. A v2 client (2026-07-28) and
 * the v1 client (2025-11-25) over real HTTP.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { startAggregator, type Aggregator } from './harness.js';

const EVERYTHING = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js');
const PREFIX = 'x-everything+';

interface SurfaceClient {
  listResources(): Promise<{ resources: Array<{ uri: string; name: string }> }>;
  listResourceTemplates(): Promise<{ resourceTemplates: Array<{ uriTemplate: string; name: string }> }>;
  readResource(params: { uri: string }): Promise<{ contents: Array<{ uri: string; text?: string; blob?: string }> }>;
  listPrompts(): Promise<{ prompts: Array<{ name: string }> }>;
  getPrompt(params: {
    name: string;
    arguments?: Record<string, string>;
  }): Promise<{ messages: Array<{ role: string; content: Record<string, unknown> }> }>;
  complete(params: unknown): Promise<{ completion: { values: string[] } }>;
}

describe('the aggregator forwards upstream resources and prompts (server-everything)', () => {
  let aggregator: Aggregator;
  let modern: ConnectedClient;
  let legacy: V1Client;

  before(async () => {
    aggregator = await startAggregator([{ name: 'everything', type: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'] }]);
    modern = await connect({ kind: 'http', url: aggregator.url }, {});
    legacy = new V1Client({ name: 'v1', version: '1.0.0' });
    await legacy.connect(new V1HttpTransport(new URL(aggregator.url)));
  });

  after(async () => {
    await modern?.close();
    await legacy?.close();
    await aggregator?.close();
  });

  for (const [label, client] of [
    ['v2 client, 2026-07-28', () => modern.client as unknown as SurfaceClient],
    ['v1 client, 2025-11-25', () => legacy as unknown as SurfaceClient],
  ] as const) {
    it(`${label}: every upstream resource and template is listed behind the upstream's prefix`, async () => {
      const { resources } = await client().listResources();
      assert.ok(resources.length > 0, 'server-everything lists static resources');
      for (const resource of resources) assert.ok(resource.uri.startsWith(PREFIX), resource.uri);
      assert.ok(resources.some((r) => r.uri.startsWith(`${PREFIX}demo://resource/static/document/`)));
      const { resourceTemplates } = await client().listResourceTemplates();
      assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).sort(), [
        `${PREFIX}demo://resource/dynamic/blob/{resourceId}`,
        `${PREFIX}demo://resource/dynamic/text/{resourceId}`,
      ]);
    });

    it(`${label}: reading a listed resource and a template URI goes upstream and answers with our URIs`, async () => {
      const { resources } = await client().listResources();
      const listed = resources.find((r) => r.uri.startsWith(`${PREFIX}demo://resource/static/document/`))!;
      const read = await client().readResource({ uri: listed.uri });
      assert.equal(read.contents[0]!.uri, listed.uri);
      assert.ok((read.contents[0]!.text ?? '').length > 0);
      const dynamic = await client().readResource({ uri: `${PREFIX}demo://resource/dynamic/text/7` });
      assert.equal(dynamic.contents[0]!.uri, `${PREFIX}demo://resource/dynamic/text/7`);
      assert.match(String(dynamic.contents[0]!.text), /7/);
    });

    it(`${label}: an upstream read error names the client-visible URI, never the upstream's alone`, async () => {
      await assert.rejects(client().readResource({ uri: `${PREFIX}demo://resource/dynamic/text/not-a-number` }), (error: Error) => {
        // server-everything says "Unknown resource: <its uri>": the client reads it with the URI it sent.
        assert.match(error.message, /Unknown resource: x-everything\+demo:\/\/resource\/dynamic\/text\/not-a-number/);
        return true;
      });
    });

    it(`${label}: prompts are listed as x_everything_<name>; getting one forwards the arguments and rewrites embedded resources`, async () => {
      const { prompts } = await client().listPrompts();
      const names = prompts.map((p) => p.name);
      for (const name of ['x_everything_simple-prompt', 'x_everything_resource-prompt', 'x_everything_completable-prompt']) {
        assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);
      }
      const simple = await client().getPrompt({ name: 'x_everything_simple-prompt' });
      assert.deepEqual(simple.messages, [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt without arguments.' } }]);
      const embedded = await client().getPrompt({
        name: 'x_everything_resource-prompt',
        arguments: { resourceType: 'Text', resourceId: '3' },
      });
      const resource = embedded.messages[1]!.content.resource as { uri: string };
      assert.equal(resource.uri, `${PREFIX}demo://resource/dynamic/text/3`);
    });

    it(`${label}: completions of an upstream prompt argument and template variable come from the upstream`, async () => {
      const prompt = await client().complete({
        ref: { type: 'ref/prompt', name: 'x_everything_completable-prompt' },
        argument: { name: 'department', value: 'S' },
      });
      assert.deepEqual(prompt.completion.values.sort(), ['Sales', 'Support']);
      const dependent = await client().complete({
        ref: { type: 'ref/prompt', name: 'x_everything_completable-prompt' },
        argument: { name: 'name', value: '' },
        context: { arguments: { department: 'Engineering' } },
      });
      assert.deepEqual(dependent.completion.values, ['Alice', 'Bob', 'Charlie']);
      const template = await client().complete({
        ref: { type: 'ref/resource', uri: `${PREFIX}demo://resource/dynamic/text/{resourceId}` },
        argument: { name: 'resourceId', value: '1' },
      });
      assert.ok(template.completion.values.length > 0 && template.completion.values.every((v) => v.startsWith('1')));
    });
  }

  it('a local resource cannot take an upstream prefix, nor a local prompt the upstream namespace', () => {
    assert.throws(
      () => aggregator.runtime.resource('squatter', `${PREFIX}demo://resource/static/document/x`, {}, () => 'x'),
      /reserved for upstream resources/,
    );
    assert.throws(() => aggregator.runtime.prompt('x_everything_mine', {}, () => 'x'), /reserved for upstream prompts/);
  });
});
