/**
 * The view behind `core_config_get` and `core_service_list`: an allow-list
 * of names, kinds and prefixes. Whatever secret the runtime options hold
 * (a store URL with a password, header values, bearer tokens, environment
 * values, commands, folders), none reaches the view; upstream states are
 * shown in muster's words next to taskvisor's own.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { safeConfigView, serviceEntry } from '../../src/server/servedSetup.js';
import type { RuntimeOptions } from '../../src/server/RuntimeOptions.js';

const SECRETS = [
  'pg-PASSWORD-77',
  'Bearer hdr-SECRET-1',
  'hdr-SECRET-1',
  'ENV-SECRET-2',
  'API_TOKEN',
  '/srv/private/bin/tool',
  '/srv/private/workflows',
  'db.internal',
  'secret-host',
];

describe('safeConfigView', () => {
  it('names upstreams, store kind, namespaces and workflow settings, and nothing secret', () => {
    const options: RuntimeOptions = {
      name: 'svc',
      store: { kind: 'postgres', url: 'postgres://app:pg-PASSWORD-77@db.internal:5432/app' },
      toolNamespace: 'up',
      upstreams: [
        { name: 'remote', type: 'streamable-http', url: 'https://secret-host/mcp', headers: { Authorization: 'Bearer hdr-SECRET-1' } },
        { name: 'local', type: 'stdio', command: '/srv/private/bin/tool', env: { API_TOKEN: 'ENV-SECRET-2' }, toolPrefix: 'loc' },
      ],
      workflows: { dir: '/srv/private/workflows', prefix: 'wf_' },
    };
    const view = safeConfigView(options);
    assert.deepEqual(view, {
      name: 'svc',
      store: { kind: 'postgres' },
      aggregator: { toolNamespace: 'up' },
      upstreams: [
        { name: 'remote', type: 'streamable-http', toolPrefix: 'remote' },
        { name: 'local', type: 'stdio', toolPrefix: 'loc' },
      ],
      workflows: { prefix: 'wf_', watch: true },
    });
    const text = JSON.stringify(view);
    for (const secret of SECRETS) assert.ok(!text.includes(secret), `the view shows ${secret}`);
  });

  it('gives the defaults when the options say nothing', () => {
    assert.deepEqual(safeConfigView({}), { store: { kind: 'lowdb' }, aggregator: { toolNamespace: 'x' }, upstreams: [] });
  });
});

describe('serviceEntry', () => {
  it("maps upstream states to muster's and never shows the last error", () => {
    const base = {
      lastError: 'connect ECONNREFUSED 10.0.0.7:443 /srv/private',
      retryAt: null,
      toolCount: 2,
      protocolVersion: null,
      tasks: false,
    };
    const shown = (['ready', 'degraded', 'connecting', 'backoff', 'stopped', 'failed', 'not started'] as const).map((state) =>
      serviceEntry({ name: 'u', state, ...base }),
    );
    assert.deepEqual(
      shown.map((entry) => [entry.state, entry.upstream_state, entry.health]),
      [
        ['running', 'ready', 'healthy'],
        ['running', 'degraded', 'unhealthy'],
        ['starting', 'connecting', 'unknown'],
        ['starting', 'backoff', 'unhealthy'],
        ['stopped', 'stopped', 'unhealthy'],
        ['failed', 'failed', 'unhealthy'],
        ['stopped', 'not started', 'unknown'],
      ],
    );
    assert.deepEqual(shown[0], {
      name: 'u',
      service_type: 'MCPServer',
      state: 'running',
      upstream_state: 'ready',
      health: 'healthy',
      tool_count: 2,
    });
    assert.ok(!JSON.stringify(shown).includes('10.0.0.7'));
  });
});
