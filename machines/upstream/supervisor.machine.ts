/**
 * The parent of every upstream connection actor: tens of children, each
 * spawned with the id `upstream:<name>`. A child that crashes (an
 * `xstate.error.actor.*` event: a provided actor threw outside its invoke)
 * is contained here — counted and respawned — so one bad upstream never
 * stops the others. Free of I/O; no entry actions (I-8).
 */
import { assign, enqueueActions, setup } from 'xstate';
import { upstreamMachine } from './upstream.machine.js';
import type { UpstreamSupervisorContext, UpstreamSupervisorEvent } from './types.js';

export const UPSTREAM_SUPERVISOR_MACHINE_VERSION = 1;

/** The child id of the upstream called `name`. */
export const upstreamChildId = (name: string) => `upstream:${name}`;

type ErrorEvent = { type: `xstate.error.actor.${string}`; error: unknown };

export const upstreamSupervisorMachine = setup({
  types: {
    context: {} as UpstreamSupervisorContext,
    events: {} as UpstreamSupervisorEvent | ErrorEvent,
  },
  actors: {
    /** Placeholder: the runtime provides the upstream machine with real actors. */
    upstream: upstreamMachine,
  },
  guards: {
    isNewUpstream: ({ context, event }) => event.type === 'UPSTREAM.ADD' && !Object.hasOwn(context.upstreams, event.upstream.name),
    isKnownChild: ({ context, event }) => {
      const id = event.type.startsWith('xstate.error.actor.') ? event.type.slice('xstate.error.actor.'.length) : '';
      return Object.keys(context.upstreams).some((name) => upstreamChildId(name) === id);
    },
  },
  actions: {
    spawnUpstream: enqueueActions(({ enqueue, event }) => {
      if (event.type !== 'UPSTREAM.ADD') return;
      enqueue.assign(({ context }) => ({ upstreams: { ...context.upstreams, [event.upstream.name]: event.upstream } }));
      enqueue.spawnChild('upstream', { id: upstreamChildId(event.upstream.name), input: event.upstream });
    }),
    stopUpstream: enqueueActions(({ enqueue, event }) => {
      if (event.type !== 'UPSTREAM.STOP') return;
      enqueue.sendTo(upstreamChildId(event.name), { type: 'STOP' });
    }),
    /** Contains the crash: count it and start that upstream afresh. */
    respawnCrashed: enqueueActions(({ enqueue, context, event }) => {
      const id = event.type.slice('xstate.error.actor.'.length);
      const name = Object.keys(context.upstreams).find((candidate) => upstreamChildId(candidate) === id);
      if (name === undefined) return;
      enqueue.assign({ crashes: { ...context.crashes, [name]: (context.crashes[name] ?? 0) + 1 } });
      enqueue.stopChild(id);
      enqueue.spawnChild('upstream', { id, input: context.upstreams[name]! });
    }),
  },
}).createMachine({
  id: 'upstreams',
  context: { upstreams: {}, crashes: {} },
  initial: 'running',
  states: {
    running: {
      on: {
        'UPSTREAM.ADD': { guard: 'isNewUpstream', actions: 'spawnUpstream' },
        'UPSTREAM.STOP': { actions: 'stopUpstream' },
        'xstate.error.actor.*': { guard: 'isKnownChild', actions: 'respawnCrashed' },
      },
    },
  },
});

export type UpstreamSupervisorMachine = typeof upstreamSupervisorMachine;
