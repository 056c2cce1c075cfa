/**
 * examples/resources-and-prompts/server.ts as a child process: resources, a
 * template, a prompt and a progress-reporting, logging tool registered one by
 * one through the runtime API, served over Streamable HTTP. Contract: it
 * prints `listening <url>` and serves all of it to a 2026-07-28 client.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { rawRequest, REPO_ROOT, resultOf, spawnNode, tempDir, TSX_IMPORT, type Child } from '../support/processes.js';

const EXAMPLE = join(REPO_ROOT, 'examples', 'resources-and-prompts', 'server.ts');

describe('examples/resources-and-prompts/server.ts', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let child: Child;
  let client: ConnectedClient;

  before(async () => {
    dir = await tempDir('taskvisor-notes-');
    const env = { ...process.env };
    delete env.PORT;
    child = spawnNode(['--import', TSX_IMPORT, EXAMPLE], { cwd: dir.path, env });
    const [, url] = (await child.waitForOutput(/^listening (\S+)$/m, { stream: 'stdout', timeoutMs: 45_000 })) as [string, string];
    client = await connect({ kind: 'http', url }, {});
  });

  after(async () => {
    await client?.close();
    await child?.kill('SIGKILL');
    await dir?.remove();
  });

  it('serves its resource, template, prompt and completions', async () => {
    const { resources } = await client.client.listResources();
    assert.deepEqual(
      resources.map((r) => r.uri),
      ['notes://readme'],
    );
    const note = await client.client.readResource({ uri: 'notes://note/todo' });
    assert.equal((note.contents[0] as { text: string }).text, 'write the docs');
    const prompt = await client.client.getPrompt({ name: 'summarize_note', arguments: { name: 'groceries' } });
    assert.deepEqual(prompt.messages, [
      { role: 'user', content: { type: 'text', text: 'Summarize this note in one line: milk, eggs, bread' } },
    ]);
    const completion = await client.client.complete({
      ref: { type: 'ref/resource', uri: 'notes://note/{name}' },
      argument: { name: 'name', value: 'g' },
    });
    assert.deepEqual(completion.completion.values, ['groceries']);
  });

  it('its tool reports progress and logs to a request that asked for them', async () => {
    const before = client.received.length;
    const outcome = await rawRequest(client, {
      method: 'tools/call',
      params: {
        name: 'add_note',
        arguments: { name: 'ideas', text: 'an actor per call' },
        _meta: { ...envelope({}), progressToken: 7, 'io.modelcontextprotocol/logLevel': 'debug' },
      },
    });
    assert.deepEqual(resultOf(outcome).content, [{ type: 'text', text: 'added ideas' }]);
    const methods = client.received
      .slice(before)
      .map((m) => (m as { method?: string }).method)
      .filter(Boolean);
    assert.deepEqual(methods, ['notifications/progress', 'notifications/message', 'notifications/progress']);
    const note = await client.client.readResource({ uri: 'notes://note/ideas' });
    assert.equal((note.contents[0] as { text: string }).text, 'an actor per call');
  });
});
