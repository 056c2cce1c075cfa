/**
 * Helpers for the scale-out tests: real `taskvisor serve` child processes on
 * one PostgreSQL schema, each with its own HTTP port, and the run log their
 * tools write.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { CLI, spawnNode, type Child } from '../support/processes.js';
import { TEST_PG_URL } from '../support/postgres.js';

export const CLUSTER_TOOLS = fileURLToPath(new URL('../fixtures/tracked-tools.ts', import.meta.url));

export interface Instance {
  label: string;
  child: Child;
  url: string;
  /** The instance id it registered under (from its start-up line). */
  instanceId: string;
  client: ConnectedClient;
}

/** Writes the config every instance of a test shares. */
export async function writeClusterConfig(dir: string, schema: string, leaseMs: number): Promise<string> {
  const file = join(dir, 'taskvisor.yaml');
  await writeFile(
    file,
    [
      'store:',
      '  kind: postgres',
      `  url: ${TEST_PG_URL}`,
      `  schema: ${schema}`,
      '  poolSize: 4',
      `  leaseMs: ${leaseMs}`,
      'tasks:',
      '  reapIntervalMs: 0',
      'tools:',
      `  - ${JSON.stringify(CLUSTER_TOOLS)}`,
      '',
    ].join('\n'),
  );
  return file;
}

/** Starts `taskvisor serve --config <config>` on a free port and connects the ext-tasks client to it. */
export async function startInstance(config: string, label: string, runLog: string, cwd: string): Promise<Instance> {
  const child = spawnNode([CLI, 'serve', '--config', config, '--http', '127.0.0.1:0'], {
    cwd,
    env: { ...process.env, TASKVISOR_RUNLOG: runLog, TASKVISOR_INSTANCE_LABEL: label },
  });
  const [, url] = await child.waitForOutput(/serving MCP over Streamable HTTP at (\S+)/);
  const [, instanceId] = await child.waitForOutput(/instance ([0-9a-f-]{36})/);
  const client = await connect({ kind: 'http', url: url! });
  return { label, child, url: url!, instanceId: instanceId!, client };
}

/** Closes clients and kills whatever still runs. */
export async function stopAll(instances: Instance[]): Promise<void> {
  await Promise.all(
    instances.map(async (instance) => {
      await instance.client.close().catch(() => undefined);
      await instance.child.kill('SIGKILL');
    }),
  );
}

/** Run starts per task id, as `label[]`. */
export async function runStarts(runLog: string): Promise<Map<string, string[]>> {
  const text = await readFile(runLog, 'utf8').catch(() => '');
  const starts = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    if (!line) continue;
    const [taskId, label] = line.split(' ');
    starts.set(taskId!, [...(starts.get(taskId!) ?? []), label!]);
  }
  return starts;
}
