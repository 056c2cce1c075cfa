/**
 * Simulated operations tools the example workflows call: nothing here
 * touches a real system. Each is an ordinary taskvisor tool; the workflows
 * reach them (and each other) through the runtime's tool registry.
 */
import { z } from 'zod';
import { defineTool } from '../../src/index.js';

/** Waits `ms`; rejects with the signal's reason as soon as it aborts (a cancelled task stops waiting). */
export const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

const json = (value: Record<string, unknown>) => ({ content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value });

/** A stable pseudo-metric per name, so runs are reproducible. */
const metricOf = (name: string) => [...name].reduce((sum, char) => (sum * 31 + char.charCodeAt(0)) % 997, 7) + 40;

export default [
  defineTool(
    'db_backup',
    { description: 'Takes a (simulated) database backup', inputSchema: z.object({ name: z.string() }) },
    async ({ name }, ctx) => {
      await sleep(300, ctx.signal);
      return json({ backupId: `bk-${name}`, sizeMb: 512 });
    },
  ),
  defineTool(
    'run_checks',
    { description: 'Runs pre-deployment checks', inputSchema: z.object({ env: z.string(), version: z.string() }) },
    ({ env, version }) => json({ passed: true, checks: ['schema', 'config', `smoke-${env}`], version }),
  ),
  defineTool(
    'deploy_release',
    { description: 'Rolls a release out (simulated, cancellable)', inputSchema: z.object({ env: z.string(), version: z.string() }) },
    async ({ env, version }, ctx) => {
      for (const percent of [25, 50, 75, 100]) {
        await sleep(250, ctx.signal);
        ctx.setStatus(`rolled out to ${percent}% of ${env}`);
      }
      return json({ env, version, url: `https://${env}.example.test/` });
    },
  ),
  defineTool('rollback', { description: 'Restores a backup', inputSchema: z.object({ backupId: z.string() }) }, ({ backupId }) =>
    json({ restored: backupId }),
  ),
  defineTool(
    'fetch_metric',
    { description: 'p95 latency of a service (simulated)', inputSchema: z.object({ service: z.string() }) },
    ({ service }) => json({ service, p95Ms: metricOf(service) }),
  ),
  defineTool(
    'notify',
    { description: 'Posts a message to a channel (simulated)', inputSchema: z.object({ channel: z.string(), text: z.string() }) },
    ({ channel, text }) => json({ channel, sent: true, text }),
  ),
];
