/**
 * taskvisor in front of taskvisor: an in-process aggregator runtime served
 * over real Streamable HTTP on 127.0.0.1, whose upstream is the demo tools
 * (`examples/aggregator/upstream.yaml`) run by the real CLI as a child —
 * over stdio (spawned by the aggregator) or over Streamable HTTP.
 */
import { join } from 'node:path';
import { createRuntime, silentLogger, stderrLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, type HttpListener } from '../../src/transports/index.js';
import type { UpstreamSpec } from '../../src/upstreams/UpstreamSpec.js';
import { CLI, freePort, REPO_ROOT, spawnNode, tempDir, type Child } from '../support/processes.js';

export const UPSTREAM_CONFIG = join(REPO_ROOT, 'examples', 'aggregator', 'upstream.yaml');
export const DEMO_TOOLS = ['x_demo_echo', 'x_demo_fail', 'x_demo_hello_world', 'x_demo_sleep', 'x_demo_tool_error'];

/** The demo upstream served over Streamable HTTP by the CLI on `port`. */
export async function startHttpDemo(port: number, cwd: string): Promise<{ child: Child; url: string }> {
  const child = spawnNode([CLI, 'serve', '--config', UPSTREAM_CONFIG, '--http', `127.0.0.1:${port}`], { cwd });
  const match = await child.waitForOutput(/serving MCP over Streamable HTTP at (\S+)/);
  return { child, url: match[1]! };
}

export interface Aggregator {
  runtime: TaskvisorRuntime;
  url: string;
  dir: string;
  /** Stops the aggregator (and any upstream child it owns). */
  close(): Promise<void>;
}

/** An aggregator over `upstreams`; HTTP principals come from the `x-user` header (default `alice`). */
export async function startAggregator(upstreams: UpstreamSpec[], options: { dir?: string } = {}): Promise<Aggregator> {
  const temp = options.dir ? undefined : await tempDir('taskvisor-agg-');
  const dir = options.dir ?? temp!.path;
  const runtime = createRuntime({
    store: { kind: 'memory' },
    stateFile: join(dir, 'state', 'runtime-state.json'),
    upstreams,
    logger: process.env.TASKVISOR_TEST_LOG ? stderrLogger() : silentLogger,
  });
  await runtime.start();
  for (const spec of upstreams)
    if (spec.autoStart !== false) await runtime.upstreams!.waitFor(spec.name, (status) => status.state === 'ready', UPSTREAM_READY_MS);
  const http: HttpListener = await listenHttp(runtime, {
    port: 0,
    authenticate: (request) => ({ id: request.headers.get('x-user') ?? 'alice' }),
  });
  return {
    runtime,
    url: http.url,
    dir,
    close: async () => {
      await runtime.close();
      await temp?.remove();
    },
  };
}

/**
 * How long an upstream may take to be ready. A stdio demo child compiles its
 * TypeScript at start, and the SDK spawns it twice (an era probe, then the
 * session): 2–3 s on an idle machine, well past 40 s at load average 13 —
 * where these tests used to fail in the before hook. Generous, because the
 * tests measure behaviour, not start-up time (that is a benchmark).
 */
export const UPSTREAM_READY_MS = 180_000;

/** The demo upstream as a stdio child of the aggregator. */
export function stdioDemoSpec(cwd: string, extra: Partial<UpstreamSpec> = {}): UpstreamSpec {
  return {
    name: 'demo',
    type: 'stdio',
    command: process.execPath,
    args: [CLI, 'serve', '--config', UPSTREAM_CONFIG, '--stdio', '--quiet'],
    cwd,
    // Connecting includes the child's start-up (see UPSTREAM_READY_MS); a timed-out attempt would start it all over.
    timeout: 120_000,
    ...extra,
  } as UpstreamSpec;
}

export { freePort };
