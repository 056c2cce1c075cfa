/**
 * The structure of an XState v5 machine as plain data, read from its state
 * nodes (`machine.root`): unlike `toJSON()` it also sees eventless
 * (`always`) transitions. The Mermaid and DOT exports (exportMachine.ts) draw
 * from it. Only *named* guards and actions can be shown (those declared in
 * `setup({ guards, actions })`); an inline function has no name, so it is
 * left out, which is one more reason machines use named ones only (I-8).
 */
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from 'xstate';

export type StateKind = 'atomic' | 'compound' | 'parallel' | 'final' | 'history';

export interface MachineGraph {
  /** The machine's id (the root state node's id). */
  id: string;
  root: StateGraphNode;
  /** Every state node, root first, depth first in declaration order. */
  nodes: StateGraphNode[];
  /** Every transition, in the order of `nodes`, then declaration order. */
  transitions: TransitionEdge[];
}

export interface StateGraphNode {
  /** The XState id: `task.active.working`, or a custom `id:`. */
  id: string;
  /** The key in its parent's `states` (for the root: the machine id). */
  key: string;
  kind: StateKind;
  /** For a history state: `shallow` or `deep`. */
  history: false | 'shallow' | 'deep';
  parentId: string | undefined;
  /** Ids of the ancestors, root first (not including this node). */
  ancestorIds: string[];
  childIds: string[];
  /** Ids of the initial child(ren): one for a compound state, none otherwise. */
  initialIds: string[];
}

export interface TransitionEdge {
  sourceId: string;
  /** Ids of the targets; empty for a targetless (internal) transition. */
  targetIds: string[];
  /** The raw event type (`CANCEL`, `xstate.after.1000.x`, `` for `always`). */
  eventType: string;
  /** What a diagram shows for the event: `CANCEL`, `after 1000ms`, `always`, `onDone(worker)`. */
  event: string;
  /** The named guard, or undefined when there is none (or it is an inline function). */
  guard: string | undefined;
  /** True when the transition has a guard that has no name (an inline function). */
  inlineGuard: boolean;
  /** Names of the named actions, in order. */
  actions: string[];
  /** How many actions are inline functions or built-ins without a name (not shown). */
  inlineActions: number;
  /** Targetless: the state is not left (no exit/entry), only actions run. */
  internal: boolean;
  reenter: boolean;
}

/** The structure of `machine` as plain data, shared by `toMermaid` and `toDot`. */
export function describeMachine(machine: AnyStateMachine): MachineGraph {
  const nodes: StateGraphNode[] = [];
  const transitions: TransitionEdge[] = [];

  const visit = (node: LiveStateNode, ancestorIds: string[]): StateGraphNode => {
    const children = Object.values<LiveStateNode>(node.states ?? {});
    const graphNode: StateGraphNode = {
      id: node.id,
      key: node.parent ? node.key : node.id,
      kind: node.type,
      history: node.type === 'history' ? node.history || 'shallow' : false,
      parentId: node.parent?.id,
      ancestorIds,
      childIds: children.map((child) => child.id),
      initialIds: node.type === 'compound' ? (node.initial?.target ?? []).map((target) => target.id) : [],
    };
    nodes.push(graphNode);
    const own: LiveTransition[] = [...node.transitions.values()].flat();
    for (const transition of [...own, ...(node.always ?? [])]) {
      transitions.push(describeTransition(node, transition));
    }
    for (const child of children) visit(child, [...ancestorIds, node.id]);
    return graphNode;
  };
  const root = visit(machine.root, []);
  return { id: root.id, root, nodes, transitions };
}

/** An XState state node and transition, as read here (public members only). */
type LiveStateNode = AnyStateNode;
type LiveTransition = AnyTransitionDefinition;

function describeTransition(source: LiveStateNode, transition: LiveTransition): TransitionEdge {
  const guard = transition.guard === undefined ? undefined : guardName(transition.guard);
  const actions: string[] = [];
  let inlineActions = 0;
  for (const action of transition.actions) {
    const name = actionName(action);
    if (name === undefined) inlineActions++;
    else actions.push(name);
  }
  const targetIds = (transition.target ?? []).map((target) => target.id);
  return {
    sourceId: source.id,
    targetIds,
    eventType: transition.eventType,
    event: eventLabel(transition.eventType, source.id),
    guard,
    inlineGuard: transition.guard !== undefined && guard === undefined,
    actions,
    inlineActions,
    internal: targetIds.length === 0,
    reenter: transition.reenter === true,
  };
}

/** `xstate.after.1000.task.x` → `after 1000ms`; `xstate.done.actor.worker` → `onDone(worker)`; `` → `always`. */
function eventLabel(eventType: string, sourceId: string): string {
  if (eventType === '') return 'always';
  const after = 'xstate.after.';
  if (eventType.startsWith(after)) {
    const rest = eventType.slice(after.length);
    const delay = rest.endsWith(`.${sourceId}`) ? rest.slice(0, -(sourceId.length + 1)) : rest;
    return /^\d+$/.test(delay) ? `after ${delay}ms` : `after ${delay}`;
  }
  if (eventType === `xstate.done.state.${sourceId}`) return 'onDone';
  for (const [prefix, label] of [
    ['xstate.done.actor.', 'onDone'],
    ['xstate.error.actor.', 'onError'],
    ['xstate.snapshot.', 'onSnapshot'],
  ] as const) {
    if (eventType.startsWith(prefix)) return `${label}(${eventType.slice(prefix.length)})`;
  }
  return eventType;
}

/** A guard's name: `isFresh`, `{ type: 'isFresh', params }` → `isFresh`, `and([a, b])` → `and(a, b)`; inline → undefined. */
function guardName(guard: unknown): string | undefined {
  if (typeof guard === 'string') return guard;
  if (guard === null || guard === undefined) return undefined;
  if (typeof guard === 'object') {
    const type = (guard as { type?: unknown }).type;
    return typeof type === 'string' ? type : undefined;
  }
  if (typeof guard === 'function') {
    const higher = guard as { name: string; check?: unknown; guards?: unknown[]; stateValue?: unknown };
    if (typeof higher.check !== 'function') return undefined; // an inline guard
    if (Array.isArray(higher.guards)) {
      return `${higher.name}(${higher.guards.map((inner) => guardName(inner) ?? '?').join(', ')})`;
    }
    if (higher.stateValue !== undefined) {
      const value = typeof higher.stateValue === 'string' ? higher.stateValue : JSON.stringify(higher.stateValue);
      return `${higher.name}(${value})`;
    }
  }
  return undefined;
}

/** A named action's name: `'touch'` or `{ type: 'touch', params }`; an inline function or built-in → undefined. */
function actionName(action: unknown): string | undefined {
  if (typeof action === 'string') return action;
  if (action !== null && typeof action === 'object') {
    const type = (action as { type?: unknown }).type;
    return typeof type === 'string' ? type : undefined;
  }
  return undefined;
}

/**
 * `EVENT [guard] / action1, action2`, plus `(internal)` for a targetless
 * transition. `actionsOnNewLine` breaks the line before `/` (DOT labels).
 */
export function transitionLabel(edge: TransitionEdge, actionsOnNewLine = false): string {
  let label = edge.event;
  if (edge.guard !== undefined) label += ` [${edge.guard}]`;
  if (edge.actions.length > 0) label += `${actionsOnNewLine ? '\n' : ' '}/ ${edge.actions.join(', ')}`;
  if (edge.internal) label += ' (internal)';
  else if (edge.reenter) label += ' (reenter)';
  return label;
}
