/**
 * One instance cut off from PostgreSQL for longer than its lease (a real TCP
 * proxy between it and the server drops every connection and refuses new
 * ones): it stops running its tasks itself, the survivor adopts and finishes
 * them, and once the network heals the cut-off instance joins again under a
 * new id and serves.
 */
import assert from 'node:assert/strict';
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { it } from 'node:test';
import { readFile, writeFile } from 'node:fs/promises';
import { freshSchema } from '../support/postgres.js';
import { createTask, isTerminalTask, pollTask, tempDir, waitFor } from '../support/processes.js';
import { runStarts, startInstance, stopAll, writeClusterConfig, type Instance } from './cluster.js';

/** A TCP proxy to 127.0.0.1:5432 that can cut every connection and refuse new ones until healed. */
async function pgProxy(): Promise<{ port: number; cut(): void; heal(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let open = true;
  const server: Server = createServer((client) => {
    if (!open) return void client.destroy();
    const upstream = tcpConnect(5432, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    cut() {
      open = false;
      for (const socket of sockets) socket.destroy();
    },
    heal() {
      open = true;
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

it(
  'an instance partitioned from PostgreSQL past its lease gives its tasks up; the survivor finishes them; the healed instance rejoins',
  { timeout: 120_000 },
  async () => {
    const dir = await tempDir('taskvisor-partition-');
    const { schema, drop } = await freshSchema('tv_part');
    const proxy = await pgProxy();
    const runLog = join(dir.path, 'runs.log');
    const instances: Instance[] = [];
    try {
      const direct = await writeClusterConfig(dir.path, schema, 1_500);
      const viaProxy = join(dir.path, 'via-proxy.yaml');
      await writeFile(viaProxy, (await readFile(direct, 'utf8')).replace('127.0.0.1:5432', `127.0.0.1:${proxy.port}`));
      const a = await startInstance(viaProxy, 'A', runLog, dir.path);
      instances.push(a);
      const b = await startInstance(direct, 'B', runLog, dir.path);
      instances.push(b);

      const id = await createTask(a.client, 'tracked_wait', { ms: 1_000, holdOn: 'A' });
      await waitFor(async () => (await runStarts(runLog)).get(id), { what: 'the run on A to start', timeoutMs: 20_000 });
      proxy.cut();
      await a.child.waitForOutput(/lost its lease: stopping its tasks here/, { timeoutMs: 30_000 });
      await waitFor(async () => (await runStarts(runLog)).get(id)?.includes('B'), {
        what: 'B to adopt the task',
        timeoutMs: 30_000,
        intervalMs: 100,
      });
      proxy.heal();

      const { task } = await pollTask(b.client, id, isTerminalTask, { timeoutMs: 30_000, intervalMs: 200 });
      assert.equal(task.status, 'completed');
      assert.equal((task.result as { content: { text: string }[] }).content[0]!.text, 'finished on B');
      assert.deepEqual((await runStarts(runLog)).get(id), ['A', 'B'], 'run once on A (given up), once on B');

      const [, newId] = await a.child.waitForOutput(/joined the cluster again as instance (\S+)/, { timeoutMs: 30_000 });
      assert.notEqual(newId, a.instanceId);
      const fresh = await waitFor(async () => createTask(a.client, 'tracked_wait', { ms: 0 }), {
        what: 'A to serve again',
        timeoutMs: 30_000,
        intervalMs: 200,
      });
      const { task: after } = await pollTask(b.client, fresh, isTerminalTask, { timeoutMs: 30_000 });
      assert.equal((after.result as { content: { text: string }[] }).content[0]!.text, 'finished on A');
    } finally {
      await stopAll(instances);
      await proxy.close();
      await drop();
      await dir.remove();
    }
  },
);
