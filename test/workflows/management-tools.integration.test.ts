/**
 * muster's read-only management tools, served with the workflows over real
 * Streamable HTTP behind bearer auth: `core_workflow_list` / `get` /
 * `validate` / `available` answer in muster's shapes, `core_service_list`
 * shows the upstreams as muster's services, and `core_config_get` shows the
 * served config without a single secret: no token, no token file path, no
 * header value, no environment value, no upstream URL or command, no folder.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { stringify } from 'yaml';
import { serve } from '../../src/cli/serve.js';
import { tempDir } from '../support/processes.js';

const CLIENT_TOKEN = 'client-bearer-SECRET-4b1d9e7a0c2f4e6a8b0d';
const HEADER_SECRET = 'Bearer upstream-header-SECRET-93ac';
const ENV_SECRET = 'env-SECRET-value-51f0';
const UPSTREAM_URL = 'http://127.0.0.1:9/hidden-upstream-path/mcp';

type Answer = { isError: boolean; text: string; json: Record<string, unknown> | undefined };

describe('muster read-only management tools', () => {
  it('answer in muster shapes and core_config_get reveals no secret', async () => {
    const cwd = await tempDir('taskvisor-musterops-');
    const workflows = join(cwd.path, 'workflows');
    await mkdir(workflows);
    await writeFile(
      join(workflows, 'child.yaml'),
      stringify({ name: 'child', description: 'Lists services', steps: [{ id: 's', tool: 'core_service_list' }] }),
    );
    await writeFile(join(workflows, 'parent.yaml'), stringify({ name: 'parent', steps: [{ id: 'c', tool: 'workflow_child' }] }));
    await writeFile(join(workflows, 'broken.yaml'), stringify({ name: 'broken', steps: [{ id: 'm', tool: 'no_such_tool' }] }));
    await writeFile(
      join(workflows, 'broken-parent.yaml'),
      stringify({ name: 'broken-parent', steps: [{ id: 'b', tool: 'workflow_broken' }] }),
    );
    await writeFile(join(cwd.path, 'tokens.yaml'), stringify({ tokens: [{ principal: 'alice', token: CLIENT_TOKEN }] }), { mode: 0o600 });
    const config = join(cwd.path, 'taskvisor.yaml');
    await writeFile(
      config,
      stringify({
        store: { kind: 'memory' },
        auth: { kind: 'token-file', file: 'tokens.yaml' },
        upstreams: [
          { name: 'remote', type: 'streamable-http', url: UPSTREAM_URL, headers: { Authorization: HEADER_SECRET } },
          { name: 'local', type: 'stdio', command: process.execPath, args: ['-e', 'process.exit(3)'], env: { API_KEY: ENV_SECRET } },
        ],
        workflows: { dir: './workflows', watch: false },
      }),
    );
    const server = await serve({ config, http: '127.0.0.1:0', quiet: true });
    const client = new Client({ name: 'management-tools', version: '1.0.0' }, { capabilities: {} });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(server.url!), { requestInit: { headers: { Authorization: `Bearer ${CLIENT_TOKEN}` } } }),
      );
      const call = async (name: string, args: Record<string, unknown> = {}): Promise<Answer> => {
        const result = await client.callTool({ name, arguments: args });
        const text = (result.content as Array<{ type: string; text?: string }>).map((block) => block.text ?? '').join(' ');
        let json: Record<string, unknown> | undefined;
        try {
          json = JSON.parse(text) as Record<string, unknown>;
        } catch {
          json = undefined;
        }
        return { isError: result.isError === true, text, json };
      };
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      for (const tool of [
        'core_workflow_list',
        'core_workflow_get',
        'core_workflow_validate',
        'core_workflow_available',
        'core_service_list',
        'core_config_get',
      ])
        assert.ok(names.includes(tool), `${tool} is served with the workflows`);
      for (const writer of ['core_workflow_create', 'core_workflow_update', 'core_workflow_delete', 'core_service_stop'])
        assert.ok(!names.includes(writer), `${writer} writes and is not served`);

      const list = await call('core_workflow_list');
      assert.deepEqual(list.json, {
        workflows: [
          { name: 'broken', available: false },
          { name: 'broken-parent', available: false },
          { name: 'child', available: true, description: 'Lists services' },
          { name: 'parent', available: true },
        ],
      });

      const got = await call('core_workflow_get', { name: 'child' });
      assert.equal(got.isError, false);
      const workflow = got.json?.workflow as Record<string, unknown>;
      assert.equal(workflow.name, 'child');
      assert.deepEqual(workflow.steps, [{ id: 's', tool: 'core_service_list' }]);
      assert.equal(workflow.file, undefined, 'a client never sees where the file is');
      assert.match(String(got.json?.yaml), /tool: core_service_list/);
      const missing = await call('core_workflow_get', { name: 'nope' });
      assert.equal(missing.isError, true);
      assert.match(missing.text, /not found/);

      assert.deepEqual((await call('core_workflow_available', { name: 'parent' })).json, { name: 'parent', available: true });
      // Transitive, as muster's rule: a workflow calling an unavailable workflow is unavailable.
      assert.deepEqual((await call('core_workflow_available', { name: 'broken-parent' })).json, {
        name: 'broken-parent',
        available: false,
      });
      const noName = await call('core_workflow_available', {});
      assert.equal(noName.isError, true);
      assert.match(noName.text, /name argument is required/);

      const valid = await call('core_workflow_validate', { name: 'fresh', steps: [{ id: 'a', tool: 'core_config_get' }] });
      assert.deepEqual(valid, { isError: false, text: 'Validation successful for workflow fresh', json: undefined });
      const duplicate = await call('core_workflow_validate', {
        name: 'dup',
        steps: [
          { id: 'a', tool: 't' },
          { id: 'a', tool: 't' },
        ],
      });
      assert.equal(duplicate.isError, true);
      assert.match(duplicate.text, /^Validation failed: [\s\S]*duplicate step id "a"/);
      const empty = await call('core_workflow_validate', { name: 'empty', steps: [] });
      assert.equal(empty.isError, true);
      assert.match(empty.text, /^Validation failed: [\s\S]*steps/);
      assert.equal((await call('core_workflow_list')).json?.workflows instanceof Array, true);
      assert.ok(!names.includes('workflow_fresh'), 'validating serves nothing');

      const services = (await call('core_service_list')).json?.services as Array<Record<string, unknown>>;
      assert.deepEqual(
        services.map((service) => [service.name, service.service_type]),
        [
          ['remote', 'MCPServer'],
          ['local', 'MCPServer'],
        ],
      );
      for (const service of services) {
        assert.ok(['healthy', 'unhealthy', 'unknown'].includes(String(service.health)));
        assert.ok(['running', 'starting', 'stopped', 'failed'].includes(String(service.state)), "muster's service states");
        assert.equal(typeof service.upstream_state, 'string');
        assert.equal(typeof service.tool_count, 'number');
      }
      // A workflow step calls them as muster's do.
      const run = await call('workflow_child');
      assert.equal(run.isError, false, run.text);
      assert.match(run.text, /MCPServer/);
      assert.match(run.text, /"state":"(running|starting|stopped|failed)"/);

      // The history tools answer bad arguments in muster's words.
      const ran = await client.callTool({ name: 'workflow_child', arguments: {} });
      const executionId = String((ran._meta as Record<string, unknown>)['io.taskvisor/executionId']);
      // Schema failures are JSON-RPC invalid-params errors (-32602), in muster's words.
      await assert.rejects(client.callTool({ name: 'core_workflow_execution_get', arguments: {} }), /execution_id is required/);
      assert.match(
        (await call('core_workflow_execution_get', { execution_id: executionId, step_id: 'nope' })).text,
        /step not found: nope/,
      );
      await assert.rejects(
        client.callTool({ name: 'core_workflow_execution_get', arguments: { execution_id: executionId, step_id: '' } }),
        /invalid step_id: it must not be empty/,
      );
      const stepView = await call('core_workflow_execution_get', { execution_id: executionId, step_id: 's' });
      assert.equal((stepView.json?.steps as unknown[]).length, 1);
      assert.equal(stepView.json?.result, undefined);

      const shown = await call('core_config_get');
      assert.deepEqual(shown.json, {
        config: {
          store: { kind: 'memory' },
          aggregator: { toolNamespace: 'x' },
          upstreams: [
            { name: 'remote', type: 'streamable-http', toolPrefix: 'remote' },
            { name: 'local', type: 'stdio', toolPrefix: 'local' },
          ],
          workflows: { prefix: 'workflow_', watch: false },
        },
      });
      for (const answer of [shown.text, JSON.stringify(services), got.text, list.text]) {
        for (const secret of [
          CLIENT_TOKEN,
          'tokens.yaml',
          HEADER_SECRET,
          'upstream-header',
          ENV_SECRET,
          'API_KEY',
          UPSTREAM_URL,
          '127.0.0.1',
          'hidden-upstream-path',
          cwd.path,
          process.execPath,
          'Bearer',
        ])
          assert.ok(!answer.includes(secret), `an answer shows ${secret}`);
      }
    } finally {
      await client.close().catch(() => {});
      await server.stop();
      await cwd.remove();
    }
  });

  it('are not served without workflows', async () => {
    const cwd = await tempDir('taskvisor-musterops-none-');
    const config = join(cwd.path, 'taskvisor.yaml');
    await writeFile(config, stringify({ store: { kind: 'memory' } }));
    const server = await serve({ config, http: '127.0.0.1:0', quiet: true });
    try {
      const names = server.runtime.tools.list().map((tool) => tool.name);
      for (const tool of ['core_workflow_list', 'core_service_list', 'core_config_get']) assert.ok(!names.includes(tool), tool);
    } finally {
      await server.stop();
      await cwd.remove();
    }
  });
});
