/**
 * Prometheus metrics over real HTTP: tasks driven through a
 * real 2026-07-28 client, then /metrics scraped and parsed: counts by tool
 * and terminal status, live tasks by status, latency histograms, polls,
 * store writes; no task id or argument in any label; off unless asked for.
 */
import assert from 'node:assert/strict';
import { get as httpGet } from 'node:http';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { ToolError, type TaskvisorRuntime } from '../../src/index.js';
import { connect } from '../support/extTasksClient.js';
import { taskOps } from '../support/taskOps.js';
import { parseExposition } from './prometheus.js';
import { serveWithOperations } from './support.js';

const SECRET_ARGUMENT = 'argument-that-must-not-be-a-label';

const register = (runtime: TaskvisorRuntime) => {
  runtime.tool('echo', { taskBehavior: 'always', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => text);
  runtime.tool('boom', { taskBehavior: 'always', inputSchema: z.object({}) }, async () => {
    throw new ToolError(-32603, 'it broke');
  });
  runtime.tool('ask', { taskBehavior: 'always', inputSchema: z.object({}) }, async (_args, ctx) => {
    const answer = await ctx.elicit('color', {
      message: 'Favourite color?',
      requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
    });
    return String(answer.content?.color);
  });
};

async function scrape(base: string, headers: Record<string, string> = {}) {
  const response = await fetch(new URL('/metrics', base), { headers });
  return { status: response.status, contentType: response.headers.get('content-type'), text: await response.text() };
}

describe('/metrics', () => {
  it('is off unless asked for: 404, and /healthz still answers', async () => {
    const served = await serveWithOperations({ register });
    try {
      assert.equal((await scrape(served.base)).status, 404);
      assert.equal((await fetch(new URL('/healthz', served.base))).status, 200);
      assert.equal(served.operations.metrics, undefined);
    } finally {
      await served.close();
    }
  });

  it('counts tasks created and finished by tool and status, live tasks, latencies, polls and store writes; labels stay bounded', async () => {
    const served = await serveWithOperations({ register, operations: { metrics: { processMetrics: true } } });
    const client = await connect({ kind: 'http', url: served.url });
    const ops = taskOps(() => client);
    try {
      const echoes = await Promise.all([1, 2, 3].map(() => ops.createTask('echo', { text: SECRET_ARGUMENT })));
      const failed = await ops.createTask('boom');
      const asking = await ops.createTask('ask');
      for (const task of echoes) await ops.waitForStatus(task.taskId, 'completed');
      await ops.waitForStatus(failed.taskId, 'failed');
      await ops.waitForStatus(asking.taskId, 'input_required');
      await served.runtime.flushed();

      const first = await scrape(served.base);
      assert.equal(first.status, 200, first.text);
      assert.match(first.contentType ?? '', /^text\/plain; version=0\.0\.4/);
      const metrics = parseExposition(first.text);
      assert.equal(metrics.sum('taskvisor_tasks_created_total', { tool: 'echo' }), 3);
      assert.equal(metrics.sum('taskvisor_tasks_created_total', { tool: 'boom' }), 1);
      assert.equal(metrics.sum('taskvisor_tasks_finished_total', { tool: 'echo', status: 'completed' }), 3);
      assert.equal(metrics.sum('taskvisor_tasks_finished_total', { tool: 'boom', status: 'failed' }), 1);
      assert.equal(metrics.sum('taskvisor_tasks_finished_total', { tool: 'ask' }), 0);
      assert.equal(metrics.sum('taskvisor_tasks_live', { status: 'input_required' }), 1);
      assert.equal(metrics.sum('taskvisor_tasks_live', { status: 'working' }), 0);
      assert.equal(metrics.sum('taskvisor_task_run_seconds_count', { tool: 'echo', status: 'completed' }), 3);
      assert.equal(metrics.sum('taskvisor_task_create_durable_seconds_count'), 5);
      assert.ok(metrics.sum('taskvisor_store_write_seconds_count', { op: 'create' }) >= 5);
      assert.ok(metrics.sum('taskvisor_store_write_seconds_count', { op: 'put' }) >= 5);
      assert.equal(metrics.sum('taskvisor_store_write_errors_total'), 0);
      assert.ok(metrics.sum('taskvisor_task_polls_total', { target: 'local' }) >= 5, 'every tasks/get above was counted');
      assert.equal(metrics.sum('taskvisor_ready'), 1);
      assert.equal(metrics.types.get('taskvisor_task_run_seconds'), 'histogram');
      assert.equal(metrics.types.get('taskvisor_tasks_created_total'), 'counter');
      assert.ok(metrics.has('process_cpu_user_seconds_total'), 'process metrics are exported');
      // Bounded cardinality: no task id, principal or argument ever becomes a label value.
      const ids = new Set([...echoes, failed, asking].map((task) => task.taskId));
      for (const sample of metrics.samples) {
        for (const value of Object.values(sample.labels)) {
          assert.ok(!ids.has(value) && !value.includes(SECRET_ARGUMENT) && value !== 'anonymous', `${sample.name} has label ${value}`);
        }
      }

      // Answering the input moves the task on: the next scrape shows it finished, none live.
      await ops.update(asking.taskId, { color: { action: 'accept', content: { color: 'teal' } } });
      await ops.waitForStatus(asking.taskId, 'completed');
      await served.runtime.flushed();
      const second = parseExposition((await scrape(served.base)).text);
      assert.equal(second.sum('taskvisor_tasks_finished_total', { tool: 'ask', status: 'completed' }), 1);
      assert.equal(second.sum('taskvisor_tasks_live'), 0);
    } finally {
      await client.close();
      await served.close();
    }
  });

  it('answers loopback clients only without auth: a Host that is not loopback (DNS rebinding) gets 403', async () => {
    const served = await serveWithOperations({ register, operations: { metrics: true } });
    try {
      // fetch() cannot set Host: a raw request does.
      const status = await new Promise<number>((resolve, reject) => {
        const request = httpGet(new URL('/metrics', served.base), { headers: { host: 'evil.example' } }, (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        });
        request.on('error', reject);
      });
      assert.equal(status, 403);
      assert.equal((await scrape(served.base)).status, 200);
    } finally {
      await served.close();
    }
  });
});
