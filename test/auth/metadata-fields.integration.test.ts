/**
 * The protected-resource metadata document (RFC 9728) served by the real CLI
 * has exactly the fields docs/security.md says, in each configuration: a
 * token file alone gives `resource`, `bearer_methods_supported` and
 * `resource_name` (the runtime's name, `taskvisor` by default); `server.name`
 * renames it; `requiredScopes` adds `scopes_supported`;
 * `authorizationServers` adds `authorization_servers`.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeTokenFile } from '../support/authFixtures.js';
import { CLI, freePort, spawnNode, tempDir } from '../support/processes.js';

let dir: Awaited<ReturnType<typeof tempDir>>;
before(async () => {
  dir = await tempDir('taskvisor-metadata-fields-');
  await writeTokenFile(join(dir.path, 'tokens.yaml'), [{ principal: 'alice', token: 'alice-token-0123456789abcdef' }]);
});
after(async () => {
  await dir?.remove();
});

/** Serves `config` (with a token-file auth section) and returns the metadata document. */
async function metadataOf(name: string, config: string): Promise<Record<string, unknown>> {
  await writeFile(join(dir.path, name), `store:\n  kind: memory\n${config}`);
  const port = await freePort();
  const child = spawnNode([CLI, 'serve', '--config', name, '--http', `127.0.0.1:${port}`], { cwd: dir.path });
  try {
    await child.waitForOutput(/serving MCP over Streamable HTTP/, { stream: 'stderr' });
    const response = await fetch(`http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(response.status, 200);
    return (await response.json()) as Record<string, unknown>;
  } finally {
    await child.kill('SIGTERM');
  }
}

describe('protected-resource metadata fields (CLI), as docs/security.md lists them', { concurrency: 2 }, () => {
  it('token file alone: resource, bearer_methods_supported and resource_name "taskvisor"', async () => {
    const document = await metadataOf('plain.yaml', 'auth:\n  kind: token-file\n  file: ./tokens.yaml\n');
    assert.deepEqual(Object.keys(document).sort(), ['bearer_methods_supported', 'resource', 'resource_name']);
    assert.equal(document.resource_name, 'taskvisor');
    assert.deepEqual(document.bearer_methods_supported, ['header']);
    assert.match(String(document.resource), /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  });

  it('server.name, requiredScopes and authorizationServers each add or set their field', async () => {
    const document = await metadataOf(
      'full.yaml',
      'server:\n  name: notes-server\nauth:\n  kind: token-file\n  file: ./tokens.yaml\n' +
        '  resource: https://mcp.example.com/mcp\n  requiredScopes: [tasks]\n  authorizationServers: [https://auth.example.com]\n',
    );
    assert.deepEqual(document, {
      resource: 'https://mcp.example.com/mcp',
      authorization_servers: ['https://auth.example.com'],
      bearer_methods_supported: ['header'],
      scopes_supported: ['tasks'],
      resource_name: 'notes-server',
    });
  });
});
