/**
 * Shared set-up of the operations tests: a real runtime on a
 * memory store served over real HTTP on 127.0.0.1 with the operations routes
 * mounted, and small readers of their JSON answers.
 */
import { createOperations } from '../../src/operations/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { createRuntime, type RuntimeOptions } from '../../src/server/TaskvisorRuntime.js';
import type { Operations, OperationsOptions } from '../../src/operations/Operations.js';
import type { ListenOptions } from '../../src/transports/listenHttp.js';

export interface Served {
  runtime: TaskvisorRuntime;
  operations: Operations;
  /** The MCP endpoint. */
  url: string;
  /** `http://127.0.0.1:<port>`. */
  base: string;
  close(): Promise<void>;
}

/** A started runtime (memory store unless given) with `register` run before start, served over HTTP with the operations routes. */
export async function serveWithOperations(
  options: {
    runtime?: RuntimeOptions;
    operations?: OperationsOptions;
    http?: ListenOptions;
    register?: (runtime: TaskvisorRuntime) => void;
  } = {},
): Promise<Served> {
  const runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger, reapIntervalMs: 0, ...options.runtime });
  options.register?.(runtime);
  const operations = createOperations(runtime, options.operations);
  await runtime.start();
  const listener = await listenHttp(runtime, { port: 0, ...options.http, routes: operations.routes });
  operations.health.trackListener('http', () => listener.server.listening);
  return { runtime, operations, url: listener.url, base: new URL(listener.url).origin, close: () => runtime.close() };
}

/** GETs `path` under `base`; returns the status, headers and parsed JSON body. */
export async function getJson<T = Record<string, unknown>>(
  base: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: T }> {
  const response = await fetch(new URL(path, base), { headers });
  return { status: response.status, headers: response.headers, body: (await response.json()) as T };
}

export interface ReadyBody {
  status: string;
  phase: string;
  checks: { name: string; ok: boolean; gating: boolean; state: string }[];
  reasons: string[];
}
