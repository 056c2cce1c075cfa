/**
 * W3C trace context end to end over real HTTP: the
 * `traceparent`/`tracestate` of a `tools/call`'s `_meta` is kept on the task,
 * handed to the tool (`ctx.trace`), to each workflow step, sent on to an
 * upstream server (a second taskvisor behind the aggregator, over HTTP),
 * written to the `--trace` file, and OpenTelemetry spans made through
 * `@opentelemetry/api` join that trace (a recording TracerProvider stands in
 * for the user's SDK). A malformed traceparent is dropped, never an error.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as otel from '@opentelemetry/api';
import { z } from 'zod';
import { ANONYMOUS_PRINCIPAL, type TaskvisorRuntime, type TraceContext } from '../../src/index.js';
import { createTraceInspector, type TraceInspector } from '../../src/inspection/index.js';
import { enableOpenTelemetry } from '../../src/operations/index.js';
import { parseWorkflow, ToolInvoker, workflowTool } from '../../src/workflows/index.js';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { tempDir, waitFor } from '../support/processes.js';
import { taskOps, type RawResponse } from '../support/taskOps.js';
import { serveWithOperations, type Served } from './support.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_ID}-01`;
const TRACESTATE = 'vendor=opaque-value';

/** The spans a user's SDK would receive: a minimal recording TracerProvider on the real API. */
interface Recorded {
  name: string;
  traceId: string;
  parentSpanId: string | undefined;
  attributes: otel.Attributes;
  status?: otel.SpanStatus;
  start: number;
  end: number;
}
const recorded: Recorded[] = [];
const toMs = (time: otel.TimeInput | undefined) => (typeof time === 'number' ? time : time instanceof Date ? time.getTime() : Date.now());
const recordingProvider: otel.TracerProvider = {
  getTracer: () => ({
    startSpan(name, options = {}, context = otel.context.active()) {
      const parent = otel.trace.getSpanContext(context);
      const spanContext = {
        traceId: parent?.traceId ?? 'f'.repeat(32),
        spanId: Math.random().toString(16).slice(2, 18).padEnd(16, '0'),
        traceFlags: 1,
      };
      const span: Recorded = {
        name,
        traceId: spanContext.traceId,
        parentSpanId: parent?.spanId,
        attributes: { ...options.attributes },
        start: toMs(options.startTime),
        end: 0,
      };
      const handle: otel.Span = {
        spanContext: () => spanContext,
        setAttribute: (key, value) => ((span.attributes[key] = value), handle),
        setAttributes: (attributes) => (Object.assign(span.attributes, attributes), handle),
        addEvent: () => handle,
        addLink: () => handle,
        addLinks: () => handle,
        setStatus: (status) => ((span.status = status), handle),
        updateName: (newName) => ((span.name = newName), handle),
        end: (endTime) => {
          span.end = toMs(endTime);
          recorded.push(span);
        },
        isRecording: () => true,
        recordException: () => {},
      };
      return handle;
    },
    startActiveSpan: () => {
      throw new Error('not used');
    },
  }),
};

describe('trace context', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let upstream: Served;
  let served: Served;
  let client: ConnectedClient;
  let inspector: TraceInspector;
  let stopSpans: () => void;
  const seen: { where: string; trace: TraceContext | undefined }[] = [];

  before(async () => {
    dir = await tempDir('taskvisor-trace-');
    otel.trace.setGlobalTracerProvider(recordingProvider);
    // The upstream: another taskvisor over real HTTP whose tool reports the trace context it was called with.
    upstream = await serveWithOperations({
      register: (runtime) =>
        runtime.tool('probe', { inputSchema: z.object({}) }, async (_args, ctx) => {
          seen.push({ where: 'upstream', trace: ctx.trace });
          return 'probed';
        }),
    });
    inspector = createTraceInspector({ file: join(dir.path, 'trace.jsonl') });
    const register = (runtime: TaskvisorRuntime) => {
      runtime.tool('traced', { taskBehavior: 'always', inputSchema: z.object({}) }, async (_args, ctx) => {
        seen.push({ where: 'tool', trace: ctx.trace });
        return 'ok';
      });
      runtime.tool('step', { inputSchema: z.object({}) }, async (_args, ctx) => {
        seen.push({ where: 'step', trace: ctx.trace });
        await new Promise((resolve) => setTimeout(resolve, 120));
        return 'stepped';
      });
      runtime.use(
        workflowTool(
          parseWorkflow('steps:\n  - id: one\n    tool: step\n  - id: two\n    tool: step\n', 'traced-run.yaml'),
          'workflow_',
          new ToolInvoker(runtime.tools),
        ),
      );
    };
    served = await serveWithOperations({
      register,
      runtime: {
        inspect: inspector.inspect,
        upstreams: [{ name: 'up', type: 'streamable-http', url: upstream.url }],
        stateFile: join(dir.path, 'state.json'),
      },
    });
    stopSpans = await enableOpenTelemetry({ source: served.runtime.store });
    await served.runtime.upstreams!.waitFor('up', (status) => status.state === 'ready');
    client = await connect({ kind: 'http', url: served.url });
  });

  after(async () => {
    stopSpans?.();
    otel.trace.disable();
    await client?.close();
    await served?.close();
    await upstream?.close();
    await inspector?.close();
    await dir?.remove();
  });

  /** tools/call with the trace context in `_meta`, next to the 2026-07-28 envelope. */
  const call = async (name: string, meta: Record<string, string>) =>
    (await client.raw({
      method: 'tools/call',
      params: { name, arguments: {}, _meta: { ...envelope(), ...meta } },
    } as never)) as RawResponse;

  it('is kept on the task and handed to the tool; the trace file and OpenTelemetry spans carry it', async () => {
    const created = await call('traced', { traceparent: TRACEPARENT, tracestate: TRACESTATE });
    assert.equal(created.kind, 'result');
    const taskId = String((created as { result: { taskId?: unknown } }).result.taskId);
    await taskOps(() => client).waitForStatus(taskId, 'completed');
    await served.runtime.flushed();
    assert.deepEqual(seen.find((entry) => entry.where === 'tool')?.trace, { traceparent: TRACEPARENT, tracestate: TRACESTATE });
    assert.deepEqual((await served.runtime.getTask(taskId, ANONYMOUS_PRINCIPAL)).trace, {
      traceparent: TRACEPARENT,
      tracestate: TRACESTATE,
    });

    const spans = await waitFor(() => {
      const mine = recorded.filter((span) => span.attributes['taskvisor.task.id'] === taskId);
      return mine.some((span) => span.name === 'taskvisor.task.run') && mine;
    });
    for (const name of ['taskvisor.task.create', 'taskvisor.task.run', 'taskvisor.store.create', 'taskvisor.store.put']) {
      const span = spans.find((entry) => entry.name === name);
      assert.ok(span, `a ${name} span`);
      assert.equal(span.traceId, TRACE_ID, `${name} joins the caller's trace`);
      assert.equal(span.parentSpanId, PARENT_ID, `${name} is a child of the caller's span`);
      assert.ok(span.end >= span.start, `${name} ends after it starts`);
    }
    assert.equal(spans.find((span) => span.name === 'taskvisor.task.run')?.attributes['taskvisor.task.status'], 'completed');

    await inspector.close();
    const lines = (await readFile(join(dir.path, 'trace.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.ok(
      lines.some((line) => line.taskId === taskId && line.traceparent === TRACEPARENT),
      'the --trace file ties the task actor to the caller trace',
    );
  });

  it('reaches every workflow step and an upstream server, and the upstream call span joins the trace', async () => {
    const run = await call('workflow_traced-run', { traceparent: TRACEPARENT });
    assert.equal(run.kind, 'result');
    const taskId = String((run as { result: { taskId?: unknown } }).result.taskId);
    await taskOps(() => client).waitForStatus(taskId, 'completed');
    assert.deepEqual(
      seen.filter((entry) => entry.where === 'step').map((entry) => entry.trace?.traceparent),
      [TRACEPARENT, TRACEPARENT],
    );

    const forwarded = await call('x_up_probe', { traceparent: TRACEPARENT, tracestate: TRACESTATE });
    assert.equal(forwarded.kind, 'result', JSON.stringify(forwarded));
    assert.deepEqual(seen.find((entry) => entry.where === 'upstream')?.trace, { traceparent: TRACEPARENT, tracestate: TRACESTATE });
    const upstreamSpan = await waitFor(() =>
      recorded.find((span) => span.name === 'taskvisor.upstream.call' && span.attributes['rpc.method'] === 'tools/call'),
    );
    assert.equal(upstreamSpan.traceId, TRACE_ID);
    assert.equal(upstreamSpan.parentSpanId, PARENT_ID);
  });

  it('drops a malformed traceparent without failing the call', async () => {
    const before = seen.length;
    for (const traceparent of ['not-a-traceparent', `00-${'0'.repeat(32)}-${PARENT_ID}-01`, `00-${TRACE_ID}-${PARENT_ID}-01-extra`]) {
      const created = await call('traced', { traceparent });
      assert.equal(created.kind, 'result');
      const taskId = String((created as { result: { taskId?: unknown } }).result.taskId);
      await taskOps(() => client).waitForStatus(taskId, 'completed');
      assert.equal((await served.runtime.getTask(taskId, ANONYMOUS_PRINCIPAL)).trace, undefined);
    }
    assert.deepEqual(
      seen.slice(before).map((entry) => entry.trace),
      [undefined, undefined, undefined],
    );
  });
});
