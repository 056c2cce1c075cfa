/**
 * The dashboard in a real headless Chromium, driven with
 * playwright-core against Debian's /usr/bin/chromium: the page loads with no
 * console error, shows a task going working → input_required → completed
 * live (from the event stream, no reload), its timeline, and a workflow
 * run's steps as a graph. Skipped, with a message, when Chromium is missing
 * (.ci/run installs it: scripts/ensure-test-tools.sh; a skip fails a CI run).
 *
 * UPDATE_DOCS_SCREENSHOT=1 writes docs/images/dashboard.png.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { parseWorkflow, ToolInvoker, workflowTool } from '../../src/workflows/index.js';
import { type TaskvisorRuntime } from '../../src/index.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { REPO_ROOT } from '../support/processes.js';
import { taskOps } from '../support/taskOps.js';
import { serveWithOperations, type Served } from './support.js';

const CHROMIUM = process.env.TASKVISOR_CHROMIUM ?? '/usr/bin/chromium';
const skip = existsSync(CHROMIUM)
  ? false
  : `no Chromium at ${CHROMIUM}: install it (bash scripts/ensure-test-tools.sh) or set TASKVISOR_CHROMIUM`;
if (skip) console.log(`# skipped dashboard.browser.system.test.ts: ${skip}`);

const PIPELINE = `
description: Fetches, checks both halves in parallel, then publishes
steps:
  - id: fetch
    tool: step
    args: { label: fetch }
  - id: check_a
    tool: step
    needs: [fetch]
    args: { label: a }
  - id: check_b
    tool: step
    needs: [fetch]
    args: { label: b }
  - id: publish
    tool: step
    needs: [check_a, check_b]
    args: { label: publish }
`;

describe('the dashboard in headless Chromium', { skip }, () => {
  let served: Served;
  let client: ConnectedClient;
  let releaseAsk!: () => void;
  let browser: import('playwright-core').Browser;

  before(async () => {
    const askMayGoOn = new Promise<void>((resolve) => (releaseAsk = resolve));
    const register = (runtime: TaskvisorRuntime) => {
      runtime.tool('ask', { taskBehavior: 'always', inputSchema: z.object({}) }, async (_args, ctx) => {
        ctx.setStatus('preparing the question');
        await askMayGoOn;
        const answer = await ctx.elicit('color', {
          message: 'Favourite color?',
          requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
        });
        return `color=${String(answer.content?.color)}`;
      });
      // Slow enough that the workflow run outlasts promoteAfterMs and becomes a task.
      runtime.tool('step', { inputSchema: z.object({ label: z.string() }) }, async ({ label }) => {
        await new Promise((resolve) => setTimeout(resolve, 150));
        return `done ${label}`;
      });
      runtime.use(workflowTool(parseWorkflow(PIPELINE, 'pipeline.yaml'), 'workflow_', new ToolInvoker(runtime.tools)));
    };
    served = await serveWithOperations({ register, operations: { ui: true, metrics: true } });
    client = await connect({ kind: 'http', url: served.url });
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });

  after(async () => {
    await browser?.close();
    await client?.close();
    await served?.close();
  });

  it('shows a task moving working → input_required → completed live, its timeline, a workflow graph, and no console errors', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`${message.type()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('requestfailed', (request) => {
      // The event stream is cut when the page closes: not a failure of the page.
      if (!request.url().endsWith('/ops/api/events')) problems.push(`request failed: ${request.url()}`);
    });
    const ops = taskOps(() => client);

    await page.goto(new URL('/ui/', served.base).href);
    await page.locator('#phase[data-ready="true"]').waitFor({ timeout: 30_000 });
    await page.locator('#feed', { hasText: 'connected' }).waitFor({ timeout: 30_000 });

    // A task created after the page loaded appears from the live feed, working.
    const { taskId } = await ops.createTask('ask');
    const row = page.locator(`#tasks tr[data-task-id="${taskId}"]`);
    await page.locator(`#tasks tr[data-task-id="${taskId}"][data-status="working"]`).waitFor({ timeout: 30_000 });
    await row.click();
    await page.locator('#detail[data-status="working"]').waitFor({ timeout: 30_000 });

    releaseAsk();
    await page.locator(`#tasks tr[data-task-id="${taskId}"][data-status="input_required"]`).waitFor({ timeout: 30_000 });
    await page.locator('#timeline li[data-kind="input"]').waitFor({ timeout: 30_000 });

    await ops.update(taskId, { color: { action: 'accept', content: { color: 'teal' } } });
    await page.locator(`#tasks tr[data-task-id="${taskId}"][data-status="completed"]`).waitFor({ timeout: 30_000 });
    await page.locator('#timeline li[data-kind="result"]').waitFor({ timeout: 30_000 });
    const timeline = await page
      .locator('#timeline li')
      .evaluateAll((items) => items.map((item) => `${item.getAttribute('data-kind')}:${item.getAttribute('data-status')}`));
    assert.deepEqual(
      timeline.filter(
        (entry) => entry.startsWith('created') || entry.startsWith('status') || entry.startsWith('input') || entry.startsWith('result'),
      ),
      // Answered, the task works again before it completes (T-18).
      ['created:working', 'status:input_required', 'input:input_required', 'status:working', 'status:completed', 'result:completed'],
    );

    // A workflow run: its steps drawn as a graph with their states.
    const run = await ops.createTask('workflow_pipeline');
    await ops.waitForStatus(run.taskId, 'completed');
    await page.locator(`#tasks tr[data-task-id="${run.taskId}"][data-status="completed"]`).waitFor({ timeout: 30_000 });
    await page.locator(`#tasks tr[data-task-id="${run.taskId}"]`).click();
    await page.locator('#workflow-graph g[data-step="publish"][data-state="completed"]').waitFor({ timeout: 30_000 });
    const steps = await page
      .locator('#workflow-graph g.step')
      .evaluateAll((groups) => groups.map((group) => `${group.getAttribute('data-step')}:${group.getAttribute('data-state')}`));
    assert.deepEqual(steps.sort(), ['check_a:completed', 'check_b:completed', 'fetch:completed', 'publish:completed']);
    assert.equal(await page.locator('#workflow-graph line').count(), 4, 'fetch→check_a, fetch→check_b, check_a→publish, check_b→publish');

    // The numbers from /metrics are on the page, refreshed by the feed's overview events.
    await page.waitForFunction(
      () => Number(document.querySelector('#numbers dd[data-metric="taskvisor_tasks_created_total"]')?.textContent) >= 2,
      undefined,
      { timeout: 30_000 },
    );

    if (process.env.UPDATE_DOCS_SCREENSHOT === '1') {
      await mkdir(join(REPO_ROOT, 'docs', 'images'), { recursive: true });
      await page.screenshot({ path: join(REPO_ROOT, 'docs', 'images', 'dashboard.png'), fullPage: true });
    }
    await page.close();
    assert.deepEqual(problems, [], 'the page logged no console error or warning');
  });
});
