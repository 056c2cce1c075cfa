/**
 * The checker the e2e suite relies on must bite: the spec digest's §1.12
 * samples that ext-tasks 0.2.2 rejects are reported as problems.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkExchange, checkNotification } from '../support/wireChecks.js';

const TASK = {
  taskId: 'a'.repeat(32),
  status: 'working',
  createdAt: '2026-01-01T00:00:00Z',
  lastUpdatedAt: '2026-01-01T00:00:00Z',
  ttlMs: 1000,
};
const META = { 'io.modelcontextprotocol/serverInfo': { name: 'S', version: '1' } };
const check = (method: string, result: Record<string, unknown>) =>
  checkExchange({ id: 1, method, params: {}, response: { jsonrpc: '2.0', id: 1, result: { _meta: META, ...result } } }, {});

describe('wire checker (self-test)', () => {
  it('accepts well-formed task messages', () => {
    assert.deepEqual(check('tools/call', { resultType: 'task', ...TASK }), []);
    assert.deepEqual(check('tasks/get', { resultType: 'complete', ...TASK }), []);
    assert.deepEqual(
      check('tasks/get', { resultType: 'complete', ...TASK, status: 'completed', result: { resultType: 'complete', content: [] } }),
      [],
    );
    assert.deepEqual(check('tasks/update', { resultType: 'complete' }), []);
    assert.deepEqual(check('tasks/cancel', { resultType: 'complete' }), []);
  });

  it('reports the §1.12 shapes the ext-tasks client rejects, and P1/T-05/T-12 leftovers', () => {
    const { ttlMs: _ttl, ...noTtl } = TASK;
    const bad: Array<[string, Record<string, unknown>]> = [
      ['tools/call', { resultType: 'task', ...TASK, content: [] }], // P1
      ['tools/call', { ...TASK }], // no resultType
      ['tools/call', { resultType: 'task', ...noTtl }],
      ['tasks/get', { resultType: 'task', ...TASK }], // D-02
      ['tasks/get', { resultType: 'complete', ...TASK, ttlMs: 1.5 }],
      ['tasks/get', { resultType: 'complete', ...TASK, status: 'input_required' }],
      ['tasks/get', { resultType: 'complete', ...TASK, status: 'completed', result: { content: [] } }], // D-04
      ['tasks/get', { resultType: 'complete', ...TASK, status: 'failed', error: { code: -32603 } }],
      ['tasks/get', { resultType: 'complete', ...TASK, status: 'working', result: { resultType: 'complete', content: [] } }], // T-12
      ['tasks/update', {}],
      ['tasks/cancel', { resultType: 'task' }],
      ['tasks/cancel', { resultType: 'complete', _meta: {} }], // T-38: no serverInfo
    ];
    for (const [method, result] of bad)
      assert.notDeepEqual(check(method, result), [], `${method} ${JSON.stringify(result)} should be reported`);
    const retired = checkExchange(
      { id: 2, method: 'tasks/get', params: {}, response: { jsonrpc: '2.0', id: 2, error: { code: -32003, message: 'x' } } },
      {},
    );
    assert.notDeepEqual(retired, [], 'D-01: -32003 is the stale code for a missing capability');
    assert.notDeepEqual(
      checkNotification({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...TASK, status: 'failed' } }, {}),
      [],
    );
  });
});
