/** Child processes of the benchmark: servers (`bench/server.ts`) and one-shot measurement scripts. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { COMPILED_IMPORT } from './compiledLibrary.js';
import type { ServerConfig } from './server.js';

export const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
/** `--import` value loading tsx whatever the working directory. */
export const TSX_IMPORT = import.meta.resolve('tsx');
/** tsx for the bench's own files, then the hook that loads the compiled library when the run compiled one. */
const IMPORTS = ['--import', TSX_IMPORT, '--import', COMPILED_IMPORT];

export interface ServerChild {
  url: string;
  /** Where `subscriptions/listen` goes: `url`, or a `ws://` endpoint (`websocket` servers). */
  listenUrl: string;
  pid: number;
  /** ms from process start of the script to listening (includes `runtime.start()`). */
  startMs: number;
  report: unknown;
  command<T = Record<string, unknown>>(cmd: 'stats' | 'flush' | 'close'): Promise<T>;
  /** `close` command, then waits for the exit (kills after 30 s). */
  stop(): Promise<void>;
  stderr(): string;
}

/** Starts `bench/server.ts` with `config` and waits for it to listen. */
export async function startServer(config: ServerConfig, options: { timeoutMs?: number; nodeArgs?: string[] } = {}): Promise<ServerChild> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...IMPORTS, `${BENCH_DIR}server.ts`, JSON.stringify(config)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiting = new Map<number, (value: unknown) => void>();
  let ready: ((line: string) => void) | undefined;
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-20_000)));
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    let cut: number;
    while ((cut = stdout.indexOf('\n')) >= 0) {
      const line = stdout.slice(0, cut);
      stdout = stdout.slice(cut + 1);
      if (line.startsWith('READY ')) ready?.(line.slice(6));
      const match = /^RESULT (\d+) (.*)$/.exec(line);
      if (match) {
        waiting.get(Number(match[1]))?.(JSON.parse(match[2]!));
        waiting.delete(Number(match[1]));
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start within ${options.timeoutMs ?? 120_000} ms\n${stderr}`));
    }, options.timeoutMs ?? 120_000);
    ready = (text) => {
      clearTimeout(timer);
      resolve(text);
    };
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening\n${stderr}`));
    });
  });
  const info = JSON.parse(line) as { url: string; listenUrl: string; pid: number; startMs: number; report: unknown };
  let next = 0;
  const command = <T>(cmd: string): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = ++next;
      waiting.set(id, resolve as (value: unknown) => void);
      child.stdin.write(`${JSON.stringify({ id, cmd })}\n`, (error) => error && reject(error));
    });
  return {
    ...info,
    command: command,
    async stop() {
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      if (child.exitCode === null) {
        await Promise.race([command('close').catch(() => undefined), exited]);
      }
      await exited;
      clearTimeout(timer);
    },
    stderr: () => stderr,
  };
}

export interface ScriptOutcome<T> {
  /** The JSON after `RESULT ` on stdout, if printed. */
  result?: T;
  /** Every `PROGRESS <json>` line, parsed. */
  progress: unknown[];
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stderr: string;
}

/** Runs `node [nodeArgs] --import tsx --import compiledRegister bench/<script> <json arg>` to its end (SIGKILL after `timeoutMs`). */
export async function runScript<T>(
  script: string,
  arg: unknown,
  options: { timeoutMs: number; nodeArgs?: string[] },
): Promise<ScriptOutcome<T>> {
  const child: ChildProcess = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), ...IMPORTS, `${BENCH_DIR}${script}`, JSON.stringify(arg)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  let result: T | undefined;
  const progress: unknown[] = [];
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-20_000)));
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    let cut: number;
    while ((cut = stdout.indexOf('\n')) >= 0) {
      const line = stdout.slice(0, cut);
      stdout = stdout.slice(cut + 1);
      if (line.startsWith('RESULT ')) result = JSON.parse(line.slice(7)) as T;
      else if (line.startsWith('PROGRESS ')) progress.push(JSON.parse(line.slice(9)));
    }
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, options.timeoutMs);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('close', (c, s) => resolve([c, s])),
  );
  clearTimeout(timer);
  return { ...(result !== undefined ? { result } : {}), progress, code, signal, timedOut, stderr };
}
