/**
 * Offline pictures of an XState v5 machine, as text (xstate-notes §3):
 *
 * - `toStatelyJson`: the machine's JSON definition (`machine.toJSON()`),
 *   what Stately Studio imports;
 * - `toMermaid`: a Mermaid `stateDiagram-v2` (GitHub renders it in Markdown);
 * - `toDot`: a Graphviz digraph (`dot -Tsvg`).
 *
 * All three are pure and deterministic: the same machine gives the same text,
 * in the order the states and transitions are declared. Labels read
 * `EVENT [guard] / action1, action2`. Only *named* guards and actions can be
 * shown (those declared in `setup({ guards, actions })`); an inline function
 * has no name, so it is left out, which is one more reason machines use named
 * ones only (I-8). `and`/`or`/`not` guards are shown as `and(a, b)` etc.
 *
 * Both diagrams are drawn from one model, `describeMachine` (machineGraph.ts).
 */
import type { AnyStateMachine } from 'xstate';
import { describeMachine, transitionLabel, type MachineGraph, type StateGraphNode } from './machineGraph.js';

// ---------------------------------------------------------------------------
// JSON (Stately Studio)

/**
 * The machine's JSON definition as Stately Studio imports it: `toJSON()`
 * round-tripped through JSON, so state node references become `#id` strings
 * and functions (inline guards and actions) disappear.
 */
export function toStatelyJson(machine: AnyStateMachine): Record<string, unknown> {
  return JSON.parse(JSON.stringify(machine.toJSON())) as Record<string, unknown>;
}

// ---------------------------------------------------------------------------
// Common layout helpers

/** Whether the root gets its own box: it has transitions of its own, or is not a plain compound state. */
function rootIsBoxed(graph: MachineGraph): boolean {
  return graph.root.kind !== 'compound' || graph.transitions.some((edge) => edge.sourceId === graph.root.id);
}

/** Ids of `node` and its ancestors, root first. */
const lineage = (node: StateGraphNode) => [...node.ancestorIds, node.id];

// ---------------------------------------------------------------------------
// Mermaid

const MERMAID_RESERVED = new Set([
  'state',
  'note',
  'end',
  'as',
  'direction',
  'class',
  'classdef',
  'style',
  'click',
  'hide',
  'scale',
  'left',
  'right',
  'of',
  'over',
  'tb',
  'bt',
  'lr',
  'rl',
  'default',
  'root',
]);

/** Mermaid ids for every state: `task.active.working` → `task_active_working`, unique, never a keyword. */
function mermaidIds(graph: MachineGraph): Map<string, string> {
  const ids = new Map<string, string>();
  const used = new Set<string>();
  for (const node of graph.nodes) {
    let base = node.id.replace(/[^A-Za-z0-9_]/g, '_');
    if (base === '' || /^[0-9]/.test(base) || MERMAID_RESERVED.has(base.toLowerCase())) base = `s_${base}`;
    let id = base;
    for (let n = 2; used.has(id); n++) id = `${base}_${n}`;
    used.add(id);
    ids.set(node.id, id);
  }
  return ids;
}

/** Text Mermaid accepts inside `state "…"` and after `:` (no quotes, `#`, `;` or line breaks). */
const mermaidText = (text: string) =>
  text
    .replace(/"/g, "'")
    .replace(/[#;]/g, '_')
    .replace(/[\r\n]+/g, ' ');

/**
 * A Mermaid `stateDiagram-v2`: compound states as `state X { … }` boxes
 * (parallel regions separated by `--`), `[*] -->` for initial states,
 * `--> [*]` for final ones, one edge per transition target, targetless
 * transitions as self-loops labelled `(internal)`. Ends with a newline.
 */
export function toMermaid(machine: AnyStateMachine): string {
  const graph = describeMachine(machine);
  const byId = new Map(graph.nodes.map((node) => [node.id, node]));
  const ids = mermaidIds(graph);
  const boxed = rootIsBoxed(graph);
  const mid = (id: string) => ids.get(id)!;

  // Edges, grouped by the box they are written in (undefined: the top level). Mermaid moves a
  // state into the box where it is last mentioned, except at the top level: an edge goes in a
  // box only when both its ends are direct children of that box, every other one at the top.
  const edgesIn = new Map<string | undefined, string[]>();
  for (const edge of graph.transitions) {
    const label = mermaidText(transitionLabel(edge));
    const targets = edge.internal ? [edge.sourceId] : edge.targetIds;
    for (const target of targets) {
      const parentId = byId.get(edge.sourceId)!.parentId;
      const sameBox = parentId !== undefined && byId.get(target)!.parentId === parentId;
      const scope = sameBox && (parentId !== graph.root.id || boxed) ? parentId : undefined;
      const line = `${mid(edge.sourceId)} --> ${mid(target)} : ${label}`;
      edgesIn.set(scope, [...(edgesIn.get(scope) ?? []), line]);
    }
  }

  const lines: string[] = ['stateDiagram-v2'];
  const emit = (depth: number, text: string) => lines.push(`${'  '.repeat(depth)}${text}`);

  /** Declares the children of `node` (recursively), then the edges written in its box. */
  const body = (node: StateGraphNode, depth: number) => {
    for (const initial of node.initialIds) emit(depth, `[*] --> ${mid(initial)}`);
    node.childIds.forEach((childId, index) => {
      if (node.kind === 'parallel' && index > 0) emit(depth, '--');
      declare(byId.get(childId)!, depth);
    });
    for (const line of edgesIn.get(node === graph.root && !boxed ? undefined : node.id) ?? []) emit(depth, line);
  };

  const declare = (node: StateGraphNode, depth: number) => {
    const label = node.kind === 'history' ? (node.history === 'deep' ? 'H*' : 'H') : node.key;
    if (node.childIds.length > 0) {
      emit(depth, `state "${mermaidText(label)}" as ${mid(node.id)} {`);
      body(node, depth + 1);
      emit(depth, '}');
    } else {
      emit(depth, `state "${mermaidText(label)}" as ${mid(node.id)}`);
    }
    if (node.kind === 'final') emit(depth, `${mid(node.id)} --> [*]`);
  };

  if (boxed) {
    emit(1, `[*] --> ${mid(graph.root.id)}`);
    declare(graph.root, 1);
    // Transitions between states of different boxes, and those of the root itself.
    for (const line of edgesIn.get(undefined) ?? []) emit(1, line);
  } else {
    body(graph.root, 1);
  }
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------------------
// Graphviz DOT

/** A double-quoted DOT id or string. */
const dotString = (text: string) => `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\r?\n/g, '\\n')}"`;

/**
 * A Graphviz digraph: compound states as clusters (`cluster_<id>`, with a
 * point for their initial state and an invisible anchor node named by the
 * state's id that edges to and from the state use, clipped at the cluster
 * with `lhead`/`ltail`), final states as `doublecircle`, one labelled edge per
 * transition target, targetless transitions as self-loops labelled
 * `(internal)`. Ends with a newline.
 */
export function toDot(machine: AnyStateMachine): string {
  const graph = describeMachine(machine);
  const byId = new Map(graph.nodes.map((node) => [node.id, node]));
  const boxed = rootIsBoxed(graph);
  const isCluster = (node: StateGraphNode) => node.childIds.length > 0 && (node !== graph.root || boxed);
  const initialPoint = (node: StateGraphNode) => dotString(`${node.id}:initial`);

  const lines: string[] = [
    `digraph ${dotString(graph.id)} {`,
    '  rankdir=LR;',
    '  compound=true;',
    '  fontname="Helvetica";',
    '  node [shape=box, style=rounded, fontname="Helvetica"];',
    '  edge [fontname="Helvetica", fontsize=10];',
  ];
  const emit = (depth: number, text: string) => lines.push(`${'  '.repeat(depth)}${text}`);
  const edges: string[] = [];

  /** Head/tail attributes for an edge touching a cluster: clip at the box unless the other end is inside it. */
  const clip = (sourceId: string, targetId: string): string[] => {
    const source = byId.get(sourceId)!;
    const target = byId.get(targetId)!;
    const attrs: string[] = [];
    if (isCluster(source) && !lineage(target).includes(source.id)) attrs.push(`ltail=${dotString(`cluster_${source.id}`)}`);
    if (isCluster(target) && !lineage(source).includes(target.id)) attrs.push(`lhead=${dotString(`cluster_${target.id}`)}`);
    return attrs;
  };

  /** An edge from a start point (outside the target's box) to `targetId`. */
  const startEdge = (point: string, targetId: string) =>
    `${point} -> ${dotString(targetId)}${isCluster(byId.get(targetId)!) ? ` [lhead=${dotString(`cluster_${targetId}`)}]` : ''};`;

  const initialEdges = (node: StateGraphNode, depth: number) => {
    if (node.initialIds.length === 0) return;
    emit(depth, `${initialPoint(node)} [shape=point, width=0.15, label=""];`);
    for (const initial of node.initialIds) edges.push(startEdge(initialPoint(node), initial));
  };

  const declare = (node: StateGraphNode, depth: number) => {
    if (isCluster(node)) {
      emit(depth, `subgraph ${dotString(`cluster_${node.id}`)} {`);
      emit(depth + 1, `label=${dotString(node.kind === 'parallel' ? `${node.key} (parallel)` : node.key)};`);
      emit(depth + 1, `style=${node.kind === 'parallel' ? '"rounded,dashed"' : 'rounded'};`);
      emit(depth + 1, `${dotString(node.id)} [shape=point, style=invis, width=0.01, height=0.01, label=""];`);
      initialEdges(node, depth + 1);
      for (const childId of node.childIds) declare(byId.get(childId)!, depth + 1);
      emit(depth, '}');
      return;
    }
    const attrs = [`label=${dotString(node.kind === 'history' ? (node.history === 'deep' ? 'H*' : 'H') : node.key)}`];
    if (node.kind === 'final') attrs.push('shape=doublecircle');
    if (node.kind === 'history') attrs.push('shape=circle');
    emit(depth, `${dotString(node.id)} [${attrs.join(', ')}];`);
  };

  if (boxed) {
    const start = dotString(`${graph.root.id}:start`);
    emit(1, `${start} [shape=point, width=0.15, label=""];`);
    edges.push(startEdge(start, graph.root.id));
    declare(graph.root, 1);
  } else {
    initialEdges(graph.root, 1);
    for (const childId of graph.root.childIds) declare(byId.get(childId)!, 1);
  }

  for (const edge of graph.transitions) {
    const label = transitionLabel(edge, true);
    const targets = edge.internal ? [edge.sourceId] : edge.targetIds;
    for (const target of targets) {
      const attrs = [`label=${dotString(label)}`, ...(target === edge.sourceId ? [] : clip(edge.sourceId, target))];
      edges.push(`${dotString(edge.sourceId)} -> ${dotString(target)} [${attrs.join(', ')}];`);
    }
  }
  for (const edge of edges) emit(1, edge);
  lines.push('}');
  return `${lines.join('\n')}\n`;
}
