/**
 * One upstream MCP connection as a statechart, free of I/O:
 *
 *   connecting → online { ready ⇄ degraded } → backoff → connecting …
 *   stopped (asked to stop) · failed (gave up after maxAttempts)
 *
 * The runtime provides the three invoked actors (src/upstreams): `connect`
 * (SDK client connect + catalog), `monitor` (pings, `list_changed`,
 * transport close) and `backoffTimer` (capped exponential jitter). The
 * machine only records what they report.
 *
 * Restore safety (I-8): no `after:` delays (the backoff timer is an invoked
 * callback), explicit invoke ids, named guards and actions, nothing required
 * in entry actions.
 */
import { assign, fromCallback, fromPromise, setup } from 'xstate';
import type { BackoffTimerInput, ConnectOutput, MonitorInput, UpstreamContext, UpstreamEvent, UpstreamInput } from './types.js';

/** Bump when states, context or invoke ids change incompatibly. */
export const UPSTREAM_MACHINE_VERSION = 1;

/** A readable one-line text of whatever an actor threw. */
export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

export const upstreamMachine = setup({
  types: {
    context: {} as UpstreamContext,
    events: {} as UpstreamEvent,
    input: {} as UpstreamInput,
  },
  actors: {
    /** Placeholder: connects, reads capabilities and the tool catalog. */
    connect: fromPromise<ConnectOutput, MonitorInput>(() => Promise.reject(new Error('connect is provided by the runtime'))),
    /** Placeholder: pings, watches `list_changed` and the transport; reports PING_*, CATALOG, DISCONNECTED. */
    monitor: fromCallback<UpstreamEvent, MonitorInput>(() => () => {}),
    /** Placeholder: sends RETRY_SCHEDULED at once, then RETRY when the delay is over. */
    backoffTimer: fromCallback<UpstreamEvent, BackoffTimerInput>(() => () => {}),
  },
  guards: {
    attemptsExhausted: ({ context }) => context.backoff.maxAttempts !== null && context.attempt + 1 >= context.backoff.maxAttempts,
    pingFailuresExhausted: ({ context }) => context.pingFailures + 1 >= context.maxPingFailures,
  },
  actions: {
    // Params, not the event: a named action sees the machine's event union, which does not hold the invoke's
    // done/error events; the connect actor's onDone/onError hand these actions what they need.
    noteConnected: assign((_, output: ConnectOutput) => {
      return {
        attempt: 0,
        pingFailures: 0,
        lastError: null,
        retryAt: null,
        toolCount: output.toolCount,
        protocolVersion: output.protocolVersion,
        tasks: output.tasks,
      };
    }),
    noteConnectError: assign(({ context }, params: { error: unknown }) => ({
      attempt: context.attempt + 1,
      lastError: errorText(params.error),
      toolCount: 0,
    })),
    noteDisconnected: assign(({ context, event }) => ({
      attempt: context.attempt + 1,
      pingFailures: 0,
      lastError: event.type === 'DISCONNECTED' || event.type === 'PING_FAILED' ? event.error : context.lastError,
      toolCount: 0,
    })),
    countPingFailure: assign(({ context, event }) => ({
      pingFailures: context.pingFailures + 1,
      lastError: event.type === 'PING_FAILED' ? event.error : context.lastError,
    })),
    /** Answering pings again: the error that made it degraded is no longer the upstream's state. */
    noteRecovered: assign({ pingFailures: 0, lastError: null }),
    setToolCount: assign(({ context, event }) => ({ toolCount: event.type === 'CATALOG' ? event.toolCount : context.toolCount })),
    setRetryAt: assign(({ context, event }) => ({ retryAt: event.type === 'RETRY_SCHEDULED' ? event.at : context.retryAt })),
    clearRetryAt: assign({ retryAt: null }),
    clearToolCount: assign({ toolCount: 0 }),
  },
}).createMachine({
  id: 'upstream',
  context: ({ input }) => ({
    name: input.name,
    backoff: input.backoff,
    maxPingFailures: input.maxPingFailures,
    attempt: 0,
    pingFailures: 0,
    lastError: null,
    retryAt: null,
    toolCount: 0,
    protocolVersion: null,
    tasks: false,
  }),
  initial: 'connecting',
  on: {
    STOP: { target: '.stopped', actions: 'clearToolCount' },
  },
  states: {
    connecting: {
      invoke: {
        id: 'connect',
        src: 'connect',
        input: ({ context }) => ({ name: context.name }),
        onDone: { target: 'online', actions: { type: 'noteConnected', params: ({ event }) => event.output } },
        onError: [
          {
            guard: 'attemptsExhausted',
            target: 'failed',
            actions: { type: 'noteConnectError', params: ({ event }) => ({ error: event.error }) },
          },
          { target: 'backoff', actions: { type: 'noteConnectError', params: ({ event }) => ({ error: event.error }) } },
        ],
      },
    },
    online: {
      invoke: { id: 'monitor', src: 'monitor', input: ({ context }) => ({ name: context.name }) },
      initial: 'ready',
      on: {
        CATALOG: { actions: 'setToolCount' },
        DISCONNECTED: { target: 'backoff', actions: 'noteDisconnected' },
        RECONNECT: { target: 'connecting', actions: 'clearToolCount' },
      },
      states: {
        ready: {
          on: {
            PING_FAILED: { target: 'degraded', actions: 'countPingFailure' },
          },
        },
        degraded: {
          on: {
            PING_OK: { target: 'ready', actions: 'noteRecovered' },
            PING_FAILED: [
              { guard: 'pingFailuresExhausted', target: '#upstream.backoff', actions: 'noteDisconnected' },
              { actions: 'countPingFailure' },
            ],
          },
        },
      },
    },
    backoff: {
      invoke: {
        id: 'backoffTimer',
        src: 'backoffTimer',
        input: ({ context }) => ({ attempt: context.attempt, backoff: context.backoff }),
      },
      on: {
        RETRY_SCHEDULED: { actions: 'setRetryAt' },
        RETRY: { target: 'connecting', actions: 'clearRetryAt' },
        RECONNECT: { target: 'connecting', actions: 'clearRetryAt' },
      },
    },
    stopped: { type: 'final' },
    failed: { type: 'final' },
  },
});

export type UpstreamMachine = typeof upstreamMachine;

/** The public state of an upstream, as `taskvisor upstreams` prints it. */
export type UpstreamState = 'connecting' | 'ready' | 'degraded' | 'backoff' | 'stopped' | 'failed';

/** Projects a snapshot's state value onto {@link UpstreamState}. */
export function upstreamStateOf(value: unknown): UpstreamState {
  if (typeof value === 'string') return value as UpstreamState;
  if (value && typeof value === 'object' && 'online' in value) return (value as { online: 'ready' | 'degraded' }).online;
  return 'connecting';
}
