/**
 * Registrations after start reach clients: a 2026-07-28
 * client hears `notifications/{tools,prompts,resources}/list_changed` on a
 * `subscriptions/listen` stream that asked for them (§4.6); a 2025-11-25
 * client on a connection (stdio) gets them unsolicited, for the lists whose
 * capability it was shown. Resource updates likewise: a listen's
 * `resourceSubscriptions`, or `resources/subscribe` on a 2025-11-25
 * connection (stdio, an HTTP session). Real HTTP, a real stdio child, v2 and
 * v1 clients.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, type HttpListener } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import catalog from '../../examples/resources-and-prompts/catalog.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { TSX_IMPORT, waitFor } from '../support/processes.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/list-changes-server.ts', import.meta.url));
type Json = Record<string, unknown>;

describe('list changes after start, 2026-07-28 over HTTP (subscriptions/listen)', () => {
  let runtime: TaskvisorRuntime;
  let listener: HttpListener;
  let modern: ConnectedClient;

  before(async () => {
    runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger });
    runtime.use(...catalog);
    await runtime.start();
    listener = await listenHttp(runtime, { port: 0 });
    modern = await connect({ kind: 'http', url: listener.url }, {});
  });

  after(async () => {
    await modern?.close();
    await runtime?.close();
  });

  it('acknowledges the three list filters and sends each change once, stamped with the subscription id', async () => {
    const subscription = await modern.client.listen({ toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true });
    try {
      const ack = modern.received.find((m) => (m as Json).method === 'notifications/subscriptions/acknowledged') as { params: Json };
      assert.deepEqual(ack.params.notifications, { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true });
      const since = modern.received.length;
      runtime.prompt('late', {}, () => 'late');
      runtime.resource('late', 'notes://late', {}, () => 'late');
      runtime.tool('late', {}, () => 'late');
      const methods = () => modern.received.slice(since).map((m) => (m as Json).method);
      await waitFor(() => methods().length >= 3, { what: 'three list_changed frames' });
      assert.deepEqual(methods(), [
        'notifications/prompts/list_changed',
        'notifications/resources/list_changed',
        'notifications/tools/list_changed',
      ]);
      for (const frame of modern.received.slice(since) as Array<{ params: { _meta: Json } }>) {
        assert.notEqual(frame.params._meta['io.modelcontextprotocol/subscriptionId'], undefined);
      }
      const { prompts } = await modern.client.listPrompts();
      assert.ok(prompts.some((prompt) => prompt.name === 'late'));
    } finally {
      await subscription.close();
    }
  });

  it('resourceSubscriptions: notifications/resources/updated for the watched URIs only', async () => {
    const subscription = await modern.client.listen({ resourceSubscriptions: ['notes://note/todo'] });
    try {
      const acks = modern.received.filter((m) => (m as Json).method === 'notifications/subscriptions/acknowledged') as Array<{
        params: Json;
      }>;
      assert.deepEqual(acks.at(-1)!.params.notifications, { resourceSubscriptions: ['notes://note/todo'] });
      const since = modern.received.length;
      runtime.resources.notifyUpdated('notes://note/ideas');
      runtime.resources.notifyUpdated('notes://note/todo');
      await waitFor(() => modern.received.length > since, { what: 'resources/updated' });
      assert.deepEqual(
        modern.received.slice(since).map((m) => [(m as Json).method, (m as { params: Json }).params.uri]),
        [['notifications/resources/updated', 'notes://note/todo']],
      );
    } finally {
      await subscription.close();
    }
  });

  it('2025-11-25 over an HTTP session: resources/subscribe, updates for it, unsubscribe stops them, list changes too', async () => {
    const client = new V1Client({ name: 'v1', version: '1.0.0' });
    const updated: string[] = [];
    let listChanges = 0;
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void updated.push(n.params.uri));
    client.setNotificationHandler(PromptListChangedNotificationSchema, async () => void listChanges++);
    const transport = new V1HttpTransport(new URL(listener.url));
    await client.connect(transport);
    try {
      assert.deepEqual((client.getServerCapabilities() as Json).resources, { listChanged: true, subscribe: true });
      await client.subscribeResource({ uri: 'notes://note/todo' });
      // The session's standalone GET stream carries what belongs to no request.
      await waitFor(
        async () => {
          runtime.resources.notifyUpdated('notes://note/todo');
          return updated.length > 0;
        },
        { what: 'resources/updated on the session', intervalMs: 200 },
      );
      await client.unsubscribeResource({ uri: 'notes://note/todo' });
      const count = updated.length;
      runtime.resources.notifyUpdated('notes://note/todo');
      runtime.prompt(`session-${Date.now()}`, {}, () => 'x');
      await waitFor(() => listChanges > 0, { what: 'prompts/list_changed on the session' });
      assert.equal(updated.length, count, 'no update after unsubscribe');
      assert.ok(updated.every((uri) => uri === 'notes://note/todo'));
    } finally {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    }
  });

  it('a stream that asked only for prompts hears nothing of resource changes', async () => {
    const subscription = await modern.client.listen({ promptsListChanged: true });
    try {
      const since = modern.received.length;
      runtime.resource('later', 'notes://later', {}, () => 'later');
      runtime.prompt('later', {}, () => 'later');
      await waitFor(() => modern.received.slice(since).some((m) => (m as Json).method === 'notifications/prompts/list_changed'));
      assert.deepEqual(
        modern.received.slice(since).map((m) => (m as Json).method),
        ['notifications/prompts/list_changed'],
      );
    } finally {
      await subscription.close();
    }
  });
});

describe('list changes after start, 2025-11-25 over stdio (unsolicited notifications)', () => {
  let client: V1Client;
  const heard: string[] = [];

  before(async () => {
    client = new V1Client({ name: 'v1', version: '1.0.0' });
    client.setNotificationHandler(PromptListChangedNotificationSchema, async () => void heard.push('prompts'));
    client.setNotificationHandler(ResourceListChangedNotificationSchema, async () => void heard.push('resources'));
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => void heard.push('tools'));
    await client.connect(new V1StdioTransport({ command: process.execPath, args: ['--import', TSX_IMPORT, FIXTURE], stderr: 'pipe' }));
  });

  after(async () => {
    await client?.close();
  });

  it('resources/subscribe: an update of a subscribed URI arrives, none after resources/unsubscribe', async () => {
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void updated.push(n.params.uri));
    assert.deepEqual((client.getServerCapabilities() as Json).resources, { listChanged: true, subscribe: true });
    await client.subscribeResource({ uri: 'notes://note/todo' });
    await client.callTool({ name: 'touch', arguments: { uri: 'notes://note/ideas' } });
    await client.callTool({ name: 'touch', arguments: { uri: 'notes://note/todo' } });
    await waitFor(() => updated.length > 0, { what: 'resources/updated' });
    await client.unsubscribeResource({ uri: 'notes://note/todo' });
    await client.callTool({ name: 'touch', arguments: { uri: 'notes://note/todo' } });
    // The touch answer follows its notifications on the same pipe: by now an update would have arrived.
    await client.callTool({ name: 'touch', arguments: { uri: 'notes://nothing' } });
    assert.deepEqual(updated, ['notes://note/todo']);
  });

  it('each registration is one list_changed, and the new entry is listed', async () => {
    await client.callTool({ name: 'add_prompt', arguments: { name: 'fresh' } });
    await waitFor(() => heard.includes('prompts'), { what: 'prompts/list_changed' });
    assert.ok((await client.listPrompts()).prompts.some((prompt) => prompt.name === 'fresh'));
    await client.callTool({ name: 'add_resource', arguments: { name: 'fresh' } });
    await waitFor(() => heard.includes('resources'), { what: 'resources/list_changed' });
    assert.ok((await client.listResources()).resources.some((resource) => resource.uri === 'notes://extra/fresh'));
    await client.callTool({ name: 'add_tool', arguments: { name: 'fresh' } });
    await waitFor(() => heard.includes('tools'), { what: 'tools/list_changed' });
    assert.ok((await client.listTools()).tools.some((tool) => tool.name === 'fresh'));
    assert.deepEqual(heard, ['prompts', 'resources', 'tools']);
  });
});
