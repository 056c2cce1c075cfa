/**
 * Helpers for tests that run real processes, real HTTP and real files:
 * fresh temp dirs, child processes with captured output, free ports, polling,
 * and the raw 2026-07-28 task requests (`tools/call` → task, `tasks/get`,
 * `tasks/update`) on a client from `extTasksClient.ts`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after } from 'node:test';
import { envelope, type ConnectedClient } from './extTasksClient.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = join(REPO_ROOT, 'bin', 'taskvisor.js');
export const DEMO_TOOLS = join(REPO_ROOT, 'examples', 'demo', 'tools.ts');
/** `--import` value loading tsx from this repo whatever the child's working directory (a bare `tsx` resolves from the cwd). */
export const TSX_IMPORT = import.meta.resolve('tsx');

/** A fresh temp dir; `remove()` deletes it (and is safe to call twice). */
export async function tempDir(prefix = 'taskvisor-test-'): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** Polls `probe` until it returns something other than `undefined`/`false`, or throws after `timeoutMs`. */
export async function waitFor<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  { timeoutMs = 5_000, intervalMs = 20, what = 'condition' }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A spawned child with its output captured. */
export interface Child {
  process: ChildProcess;
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves with how the child ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first match of `pattern` in stdout or stderr (`stream`), rejects if the child exits first or on timeout. */
  waitForOutput(pattern: RegExp, options?: { stream?: 'stdout' | 'stderr'; timeoutMs?: number }): Promise<RegExpMatchArray>;
  /** Sends `signal` (default SIGKILL) unless the child already exited, and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Every child spawned here and still running. When a test times out, node:test
 * cancels it but its code keeps running, and the `finally` that would kill its
 * children may never come: the children's pipes then keep the test file's
 * process alive for ever (a full `npm test` hung 30+ minutes on a timed-out
 * cluster suite). So whatever is still running when the file's tests are
 * over is killed here.
 */
const running = new Map<ChildProcess, () => void>();
// Only in a test file run by `node --test` (it sets NODE_TEST_CONTEXT): scripts that import these helpers
// (scripts/chaos.ts, scripts/fuzz.ts) would otherwise start a test run of their own and print TAP.
if (process.env.NODE_TEST_CONTEXT !== undefined) {
  after(() => {
    for (const kill of running.values()) kill();
  });
}

/** Spawns `node <args>` with piped stdio. */
export function spawnNode(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Child {
  return spawnCommand(process.execPath, args, options);
}

/**
 * Spawns `command <args>` (found on PATH) with piped stdio. With `group`, the
 * child leads its own process group and `kill()` signals the whole group: for
 * wrappers like `npx` whose own child would otherwise outlive them (holding
 * the pipes open).
 */
export function spawnCommand(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; group?: boolean } = {},
): Child {
  const child = spawn(command, args, {
    cwd: options.cwd ?? REPO_ROOT,
    env: options.env ?? process.env,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: options.group === true,
  });
  running.set(child, () => {
    try {
      // A group leader's group goes with it (see `group`).
      if (options.group === true && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      else child.kill('SIGKILL');
    } catch {
      // gone already
    }
  });
  let stdout = '';
  let stderr = '';
  let done = false;
  const watchers = new Set<() => void>();
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    for (const watch of watchers) watch();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    for (const watch of watchers) watch();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    // 'close' (not 'exit'): all output has arrived by then.
    child.once('close', (code, signal) => {
      running.delete(child);
      done = true;
      resolve({ code, signal });
      for (const watch of watchers) watch();
    }),
  );
  return {
    process: child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    exited,
    waitForOutput(pattern, { stream, timeoutMs = 45_000 } = {}) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(new Error(`timed out waiting for ${pattern} from the child\nstdout: ${stdout}\nstderr: ${stderr}`));
        }, timeoutMs);
        const check = () => {
          const text = stream === 'stdout' ? stdout : stream === 'stderr' ? stderr : `${stdout}\n${stderr}`;
          const match = pattern.exec(text);
          if (match) {
            clearTimeout(timer);
            watchers.delete(check);
            resolve(match);
          } else if (done) {
            clearTimeout(timer);
            watchers.delete(check);
            reject(new Error(`the child exited before printing ${pattern}\nstdout: ${stdout}\nstderr: ${stderr}`));
          }
        };
        watchers.add(check);
        check();
      });
    },
    async kill(signal = 'SIGKILL') {
      if (options.group === true && child.pid !== undefined && !done) {
        try {
          process.kill(-child.pid, signal);
        } catch {
          // the group is gone already
        }
      } else if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Runs `node <args>` to its end (killing it after `timeoutMs`) and returns code and output. */
export async function runNode(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  const child = spawnNode(args, options);
  child.process.stdin!.end();
  const timer = setTimeout(() => child.process.kill('SIGKILL'), options.timeoutMs ?? 45_000);
  const { code, signal } = await child.exited;
  clearTimeout(timer);
  return { code, signal, stdout: child.stdout, stderr: child.stderr };
}

// ---------------------------------------------------------------------------------------------
// Raw 2026-07-28 task traffic

export type RawOutcome = Awaited<ReturnType<ConnectedClient['raw']>>;

/** The result of a raw request, or a thrown error naming the JSON-RPC error. */
export function resultOf(outcome: RawOutcome): Record<string, unknown> {
  if (outcome.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(outcome)}`);
  return outcome.result as Record<string, unknown>;
}

/** The JSON-RPC error of a raw request, or a thrown error. */
export function errorOf(outcome: RawOutcome): { code: number; message: string; data?: unknown } {
  if (outcome.kind !== 'error') throw new Error(`expected a JSON-RPC error, got ${JSON.stringify(outcome)}`);
  return outcome.error;
}

/** How long a raw request may go unanswered (the harness's raw path has no timeout of its own). */
export const RAW_TIMEOUT_MS = 30_000;

/**
 * A raw request that fails, with what the transport reported, instead of
 * hanging forever when its response never arrives.
 */
export async function rawRequest(client: ConnectedClient, request: { method: string; params?: unknown }): Promise<RawOutcome> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const errors = client.transportErrors.map((error) => error.message).join('; ') || 'none';
      const recent = client.exchanges
        .slice(-3)
        .map((exchange) => ({ id: exchange.id, method: exchange.method, answered: exchange.response !== undefined }));
      reject(
        new Error(
          `${request.method}: no response after ${RAW_TIMEOUT_MS} ms; transport errors: ${errors}; last exchanges: ${JSON.stringify(recent)}`,
        ),
      );
    }, RAW_TIMEOUT_MS);
  });
  try {
    return await Promise.race([client.raw(request as never), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** `tools/call` declaring the tasks extension. */
export function callTool(client: ConnectedClient, name: string, args: Record<string, unknown> = {}): Promise<RawOutcome> {
  return rawRequest(client, { method: 'tools/call', params: { name, arguments: args, _meta: envelope() } });
}

/** `tools/call` that must create a task; resolves the taskId. */
export async function createTask(client: ConnectedClient, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const result = resultOf(await callTool(client, name, args));
  if (result.resultType !== 'task' || typeof result.taskId !== 'string') {
    throw new Error(`expected a CreateTaskResult, got ${JSON.stringify(result)}`);
  }
  return result.taskId;
}

export function getTask(client: ConnectedClient, taskId: string): Promise<RawOutcome> {
  return rawRequest(client, { method: 'tasks/get', params: { taskId, _meta: envelope() } });
}

export function updateTask(client: ConnectedClient, taskId: string, inputResponses: Record<string, unknown>): Promise<RawOutcome> {
  return rawRequest(client, { method: 'tasks/update', params: { taskId, inputResponses, _meta: envelope() } });
}

/** Polls `tasks/get` until `accept(task)`; returns that task and every status seen on the way. */
export async function pollTask(
  client: ConnectedClient,
  taskId: string,
  accept: (task: Record<string, unknown>) => boolean,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<{ task: Record<string, unknown>; statuses: string[] }> {
  const statuses: string[] = [];
  const task = await waitFor(
    async () => {
      const task = resultOf(await getTask(client, taskId));
      if (statuses.at(-1) !== task.status) statuses.push(task.status as string);
      return accept(task) ? task : undefined;
    },
    { timeoutMs: options.timeoutMs ?? 5_000, intervalMs: options.intervalMs ?? 25, what: `task ${taskId}` },
  );
  return { task, statuses };
}

export const isTerminalTask = (task: Record<string, unknown>) =>
  task.status === 'completed' || task.status === 'failed' || task.status === 'cancelled';
