/**
 * The load-balancer examples work as written: Debian's nginx and
 * HAProxy run examples/cluster/nginx.conf and haproxy.cfg — only the listen
 * address and the instance addresses are changed — in front of two real
 * `taskvisor serve` instances on one PostgreSQL schema. Instance A is
 * stopped (SIGSTOP: it accepts connections but answers nothing), requests
 * are sent through the balancer, then A is killed (kill -9) with requests in
 * flight to it: every `tasks/get` in flight is resent to B and answered; a
 * `tools/call` in flight is not resent (502: resending would start the work
 * twice), and no tool ran for it.
 *
 * The binaries come from `scripts/ensure-test-tools.sh` (run by .ci/run); if
 * they are missing the suite is skipped saying so (a skip that fails a CI run).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { postJsonRpc, type RawHttpReply } from '../support/httpRaw.js';
import { freshSchema } from '../support/postgres.js';
import { delay, freePort, REPO_ROOT, tempDir, waitFor } from '../support/processes.js';
import { runStarts, startInstance, stopAll, writeClusterConfig, type Instance } from './cluster.js';

const EXAMPLES = join(REPO_ROOT, 'examples', 'cluster');
const TASKS = 16;
const CALLS = 6;

function binary(name: string): string | undefined {
  for (const dir of ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin']) {
    const path = join(dir, name);
    if (spawnSync(path, ['-v'], { stdio: 'ignore' }).error === undefined) return path;
  }
  return undefined;
}

const hostPort = (url: string) => new URL(url).host;

/** The example with our addresses: the listen line and servers 3001/3002 → A/B (3003 dropped). Everything else as written. */
function withAddresses(text: string, listen: [RegExp, string], a: string, b: string): string {
  return text
    .replace(listen[0], listen[1])
    .replaceAll('127.0.0.1:3001', a)
    .replaceAll('127.0.0.1:3002', b)
    .split('\n')
    .filter((line) => !line.includes('127.0.0.1:3003'))
    .join('\n');
}

interface Balancer {
  url: string;
  process: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

function startProcess(command: string, args: string[]): { process: ChildProcess; output(): string } {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { process: child, output: () => output };
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, delay(5_000).then(() => child.kill('SIGKILL'))]);
}

async function startNginx(nginx: string, dir: string, a: string, b: string): Promise<Balancer> {
  const port = await freePort();
  const example = await readFile(join(EXAMPLES, 'nginx.conf'), 'utf8');
  // Test-only: paths a throwaway nginx may write, no access log.
  const conf = withAddresses(example, [/listen 80;/, `listen 127.0.0.1:${port};`], a, b).replace(
    'http {',
    `http {\n  access_log off;\n  client_body_temp_path ${dir}/body;\n  proxy_temp_path ${dir}/proxy;`,
  );
  const file = join(dir, 'nginx.conf');
  await writeFile(file, conf);
  const started = startProcess(nginx, [
    '-c',
    file,
    '-p',
    dir,
    '-g',
    `daemon off; master_process on; worker_processes 1; user root; pid ${dir}/nginx.pid; error_log ${dir}/nginx-error.log;`,
  ]);
  return { url: `http://127.0.0.1:${port}/mcp`, ...started, stop: () => stopProcess(started.process) };
}

async function startHaproxy(haproxy: string, dir: string, a: string, b: string): Promise<Balancer> {
  const port = await freePort();
  const example = await readFile(join(EXAMPLES, 'haproxy.cfg'), 'utf8');
  const file = join(dir, 'haproxy.cfg');
  await writeFile(file, withAddresses(example, [/bind :80/, `bind 127.0.0.1:${port}`], a, b));
  const started = startProcess(haproxy, ['-f', file, '-db']);
  return { url: `http://127.0.0.1:${port}/mcp`, ...started, stop: () => stopProcess(started.process) };
}

/** A request through the balancer that records when it is answered. */
function tracked(promise: Promise<RawHttpReply>, taskId?: string) {
  const entry: { taskId?: string; reply?: RawHttpReply; error?: unknown; settled: boolean; done: Promise<void> } = {
    ...(taskId !== undefined ? { taskId } : {}),
    settled: false,
    done: Promise.resolve(),
  };
  entry.done = promise.then(
    (reply) => {
      entry.reply = reply;
      entry.settled = true;
    },
    (error: unknown) => {
      entry.error = error;
      entry.settled = true;
    },
  );
  return entry;
}

const NGINX = binary('nginx');
const HAPROXY = binary('haproxy');

for (const [name, path, start] of [
  ['nginx', NGINX, startNginx],
  ['HAProxy', HAPROXY, startHaproxy],
] as const) {
  const skip = path ? false : `${name} is not installed: run scripts/ensure-test-tools.sh (apt-get install nginx-light haproxy)`;
  describe(`examples/cluster with ${name}`, { skip }, () => {
    it('a 2025-11-25 client keeps its HTTP session: every request reaches the instance that opened it', async () => {
      const dir = await tempDir('taskvisor-balancer-');
      const { schema, drop } = await freshSchema('tv_balancer');
      const instances: Instance[] = [];
      let balancer: Balancer | undefined;
      const clients: V1Client[] = [];
      try {
        await mkdir(join(dir.path, 'body'));
        const config = await writeClusterConfig(dir.path, schema, 60_000);
        instances.push(
          ...(await Promise.all(['A', 'B'].map((label) => startInstance(config, label, join(dir.path, 'runs.log'), dir.path)))),
        );
        const [a, b] = instances as [Instance, Instance];
        balancer = await start(path!, dir.path, hostPort(a.url), hostPort(b.url));
        const url = balancer.url;
        await waitFor(async () => balancer!.process.exitCode === null && (await postJsonRpc(url, 'tools/list', {})).status === 200, {
          timeoutMs: 20_000,
          intervalMs: 200,
          what: `${name} to answer`,
        });
        // Several sessions side by side: without pinning, later requests of some land on the other instance (404).
        for (let i = 0; i < 4; i++) {
          const client = new V1Client({ name: `v1-${i}`, version: '1.0.0' });
          await client.connect(new V1HttpTransport(new URL(url)));
          clients.push(client);
        }
        for (let round = 0; round < 5; round++) {
          for (const client of clients) assert.ok((await client.listTools()).tools.length > 0);
        }
      } finally {
        await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
        await balancer?.stop();
        await stopAll(instances);
        await drop();
        await dir.remove();
      }
    });

    it('an in-flight tasks/get to a killed instance is resent and answered; an in-flight tools/call is not resent', async () => {
      const dir = await tempDir('taskvisor-balancer-');
      const { schema, drop } = await freshSchema('tv_balancer');
      const runLog = join(dir.path, 'runs.log');
      const instances: Instance[] = [];
      let balancer: Balancer | undefined;
      try {
        await mkdir(join(dir.path, 'body'));
        const config = await writeClusterConfig(dir.path, schema, 60_000);
        instances.push(...(await Promise.all(['A', 'B'].map((label) => startInstance(config, label, runLog, dir.path)))));
        const [a, b] = instances as [Instance, Instance];
        balancer = await start(path!, dir.path, hostPort(a.url), hostPort(b.url));
        const url = balancer.url;
        const up = await waitFor(
          async () => {
            if (balancer!.process.exitCode !== null) return 'exited';
            return (await postJsonRpc(url, 'tools/list', {})).status === 200 && 'up';
          },
          { timeoutMs: 20_000, intervalMs: 200, what: `${name} to answer` },
        );
        assert.equal(up, 'up', `${name} did not start with the example config:\n${balancer.output()}`);

        const taskIds: string[] = [];
        for (let i = 0; i < TASKS; i++) {
          const reply = await postJsonRpc(url, 'tools/call', { name: 'tracked_wait', arguments: { ms: 600_000 } });
          assert.equal(reply.status, 200, reply.text);
          taskIds.push(String(reply.message?.result?.taskId));
        }
        const startsBefore = [...(await runStarts(runLog)).values()].flat().length;
        assert.equal(startsBefore, TASKS);

        a.child.process.kill('SIGSTOP');
        const gets = taskIds.map((taskId) => tracked(postJsonRpc(url, 'tasks/get', { taskId }), taskId));
        const calls = Array.from({ length: CALLS }, () =>
          tracked(postJsonRpc(url, 'tools/call', { name: 'tracked_wait', arguments: { ms: 600_000 } })),
        );
        // B answers at once; whatever went to the stopped A stays in flight.
        const answeredByB = () => gets.some((get) => get.settled) && calls.some((call) => call.settled);
        for (const deadline = Date.now() + 15_000; !answeredByB() && Date.now() < deadline;) await delay(100);
        assert.ok(
          answeredByB(),
          `B answered ${gets.filter((get) => get.settled).length}/${TASKS} tasks/get and ${calls.filter((call) => call.settled).length}/${CALLS} tools/call`,
        );
        await delay(1_000);
        const inFlightGets = gets.filter((get) => !get.settled);
        const inFlightCalls = calls.filter((call) => !call.settled);
        assert.ok(inFlightGets.length > 0, `some tasks/get went to the stopped instance (of ${TASKS})`);
        assert.ok(inFlightCalls.length > 0, `some tools/call went to the stopped instance (of ${CALLS})`);

        await a.child.kill('SIGKILL');
        await Promise.all([...gets.map((get) => get.done), ...calls.map((call) => call.done)]);

        for (const get of gets) {
          assert.equal(get.error, undefined);
          assert.equal(get.reply!.status, 200, `tasks/get ${get.taskId}: ${get.reply!.text}`);
          assert.equal(get.reply!.message?.result?.taskId, get.taskId);
        }
        for (const call of inFlightCalls) {
          assert.equal(call.error, undefined);
          assert.equal(call.reply!.status, 502, `an in-flight tools/call is answered 502, not resent: ${call.reply!.text}`);
        }
        const answered = calls.filter((call) => call.reply?.status === 200).length;
        assert.equal(answered, CALLS - inFlightCalls.length);
        // No tool started for the calls that were not resent: one run start per task that was answered.
        const starts = [...(await runStarts(runLog)).values()].flat().length;
        assert.equal(starts, TASKS + answered);
      } finally {
        await balancer?.stop();
        await stopAll(instances);
        await drop();
        await dir.remove();
      }
    });
  });
}
