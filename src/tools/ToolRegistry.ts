/**
 * The tools a runtime serves. Listing entries (JSON Schema included) are
 * built once per change, not per request: the HTTP entry builds a server per
 * request and schema conversion is not free (perf-baseline).
 */
import { ToolPolicy } from '../core/toolPolicy.js';
import { z } from 'zod';
import type { JsonObject } from '../core/json.js';
import type { ForwardedToolCall, HeldForwarding, ToolDefinition, ToolHandler, ToolOptions } from './ToolDefinition.js';
import { schemasOf } from './ToolSchema.js';
import { definedProps } from '../core/definedProps.js';

/** Tool names as MCP recommends them: 1–128 of `A-Z a-z 0-9 _ - .` */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** One `tools/list` entry. */
export interface ListedTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: JsonObject;
  outputSchema?: JsonObject;
  annotations?: JsonObject;
}

/** A forwarded tool as an upstream's catalog registers it; `held` when its calls may be held here as tasks. */
export interface ForwardedEntry {
  listed: ListedTool;
  forward: ForwardedToolCall;
  held?: { options: ToolOptions; handler: ToolHandler; held: HeldForwarding };
}

export class ToolRegistry {
  /**
   * Who may call what (config `toolPolicy`): asked by every path that
   * reaches a tool through this registry — `tools/list`, `tools/call`,
   * workflow steps. Default: everyone may call everything.
   */
  policy: ToolPolicy = ToolPolicy.allowAll;
  private readonly tools = new Map<string, ToolDefinition>();
  private listing: ListedTool[] | undefined;
  private readonly listeners = new Set<() => void>();
  /** Listing entries of forwarded tools, kept as the upstream described them. */
  private readonly forwardedListings = new Map<string, ListedTool>();
  /** Name prefixes only `addForwarded` may use (the aggregator's namespace). */
  private readonly reserved = new Set<string>();
  /** Definitions of forwarded tools that are not listed now (their upstream is down), for the tasks they run. */
  private readonly offline = new Map<string, (name: string) => ToolDefinition | undefined>();

  /**
   * Reserves names starting with `prefix` for forwarded tools: `add` refuses
   * them, so an upstream tool can never be shadowed by, nor shadow, a local
   * or workflow tool.
   */
  reserve(prefix: string): void {
    for (const name of this.tools.keys()) {
      if (name.startsWith(prefix) && !this.forwardedListings.has(name)) {
        throw new Error(`Tool ${JSON.stringify(name)} uses the prefix ${JSON.stringify(prefix)} reserved for upstream tools`);
      }
    }
    this.reserved.add(prefix);
  }

  /**
   * Registers a tool another server runs (an upstream's): listed as
   * `listed` says, called through `forward`. Refused when the name is taken.
   */
  addForwarded(listed: ListedTool, forward: ForwardedToolCall, held?: ForwardedEntry['held']): void {
    const name = listed.name;
    if (!TOOL_NAME.test(name)) throw new Error(`Invalid tool name ${JSON.stringify(name)}: use 1-128 characters of A-Z a-z 0-9 _ - .`);
    if (this.tools.has(name)) throw new Error(`A tool named ${JSON.stringify(name)} is already registered`);
    if (held) validateOptions(name, held.options);
    const definition: ToolDefinition = held
      ? { name, options: held.options, handler: held.handler, forward, held: held.held }
      : {
          name,
          options: {
            ...definedProps({ title: listed.title, description: listed.description }),
          },
          handler: () => {
            throw new Error(`${name} is a forwarded tool`);
          },
          forward,
        };
    this.tools.set(name, definition);
    this.forwardedListings.set(name, listed);
    this.listing?.push(listed);
    this.changed();
  }

  /** Replaces every forwarded tool whose name starts with `prefix` by `entries`, with one change notification. */
  replaceForwarded(prefix: string, entries: ForwardedEntry[]): void {
    const silent = new Set<() => void>(this.listeners);
    this.listeners.clear();
    try {
      for (const name of [...this.forwardedListings.keys()]) if (name.startsWith(prefix)) this.remove(name);
      for (const entry of entries) if (!this.tools.has(entry.listed.name)) this.addForwarded(entry.listed, entry.forward, entry.held);
    } finally {
      for (const listener of silent) this.listeners.add(listener);
    }
    this.changed();
  }

  /** Registers a tool; a duplicate or malformed name is refused with an error naming it. */
  add<A extends JsonObject>(name: string, options: ToolOptions, handler: ToolHandler<A>): void {
    if (!TOOL_NAME.test(name)) {
      throw new Error(`Invalid tool name ${JSON.stringify(name)}: use 1-128 characters of A-Z a-z 0-9 _ - .`);
    }
    for (const prefix of this.reserved) {
      if (name.startsWith(prefix))
        throw new Error(`Tool ${JSON.stringify(name)}: names starting with ${JSON.stringify(prefix)} are reserved for upstream tools`);
    }
    if (this.tools.has(name)) throw new Error(`A tool named ${JSON.stringify(name)} is already registered`);
    if (typeof handler !== 'function') throw new Error(`Tool ${JSON.stringify(name)}: the handler must be a function`);
    validateOptions(name, options);
    // Build the schema now so a schema zod cannot express as JSON Schema fails at registration, not on tools/list.
    const listed = toListed(name, options);
    // Cast: a handler of the schema's output type stored as one of JSON args; calls validate args with that schema first.
    this.tools.set(name, { name, options, handler: handler as ToolHandler });
    this.listing?.push(listed);
    this.changed();
  }

  /** Removes a tool; resolves `true` when it existed. */
  remove(name: string): boolean {
    const removed = this.tools.delete(name);
    this.forwardedListings.delete(name);
    if (removed) {
      this.listing = undefined;
      this.changed();
    }
    return removed;
  }

  /**
   * Removes `remove` and adds `add` as one change (one `list_changed`): every
   * addition is checked first, and on any error nothing changes. Used to swap
   * a set of tools in place (workflow hot reload).
   */
  swap(remove: readonly string[], add: readonly ToolDefinition[]): void {
    const removed = new Set(remove);
    const names = new Set<string>();
    for (const definition of add) {
      const { name } = definition;
      if (!TOOL_NAME.test(name)) {
        throw new Error(`Invalid tool name ${JSON.stringify(name)}: use 1-128 characters of A-Z a-z 0-9 _ - .`);
      }
      if (names.has(name) || (this.tools.has(name) && !removed.has(name))) {
        throw new Error(`A tool named ${JSON.stringify(name)} is already registered`);
      }
      if (typeof definition.handler !== 'function') throw new Error(`Tool ${JSON.stringify(name)}: the handler must be a function`);
      validateOptions(name, definition.options);
      toListed(name, definition.options);
      names.add(name);
    }
    for (const name of removed) this.tools.delete(name);
    for (const definition of add) this.tools.set(definition.name, definition);
    this.listing = undefined;
    this.changed();
  }

  get(name: string): ToolDefinition | undefined {
    return this.tools.get(name);
  }

  /**
   * Serves {@link forTasks} lookups of unlisted names under `prefix` (a
   * reserved one) from `resolve`: the tasks of an upstream's tools are
   * recovered at start-up, before the upstream is connected and its tools
   * are listed.
   */
  resolveOffline(prefix: string, resolve: (name: string) => ToolDefinition | undefined): void {
    this.offline.set(prefix, resolve);
  }

  /**
   * The lookup tasks use (recovery, restore, passivation): the listed tool,
   * or for an upstream's tool that is not listed now, what its resolver
   * knows of it. Calls (`get`) see only listed tools.
   */
  forTasks(): Pick<ToolRegistry, 'get'> {
    return {
      get: (name) => {
        const listed = this.tools.get(name);
        if (listed) return listed;
        for (const [prefix, resolve] of this.offline) if (name.startsWith(prefix)) return resolve(name);
        return undefined;
      },
    };
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  names(): string[] {
    return [...this.tools.keys()];
  }

  /** The `tools/list` entries, cached until the next change. */
  list(): ListedTool[] {
    this.listing ??= [...this.tools.values()].map((tool) => this.forwardedListings.get(tool.name) ?? toListed(tool.name, tool.options));
    return this.listing;
  }

  /** Calls `listener` after every change; returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}

function validateOptions(name: string, options: ToolOptions): void {
  const where = `Tool ${JSON.stringify(name)}`;
  if (options.taskBehavior !== undefined && !['auto', 'always', 'never'].includes(options.taskBehavior)) {
    throw new Error(`${where}: taskBehavior must be 'auto', 'always' or 'never', got ${JSON.stringify(options.taskBehavior)}`);
  }
  if (options.resume !== undefined && !['fail', 'replay', 'resume'].includes(options.resume)) {
    throw new Error(`${where}: resume must be 'fail', 'replay' or 'resume', got ${JSON.stringify(options.resume)}`);
  }
  const isNonNegativeInt = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 0;
  if (options.ttlMs !== undefined && options.ttlMs !== null && !isNonNegativeInt(options.ttlMs)) {
    throw new Error(`${where}: ttlMs must be a non-negative integer or null, got ${JSON.stringify(options.ttlMs)}`);
  }
  // The wire types both hints as integers (spec §1.2): 1.5 would be rejected by clients.
  if (options.pollIntervalMs !== undefined && !isNonNegativeInt(options.pollIntervalMs)) {
    throw new Error(`${where}: pollIntervalMs must be a non-negative integer, got ${JSON.stringify(options.pollIntervalMs)}`);
  }
  if (options.promoteAfterMs !== undefined && !isNonNegativeInt(options.promoteAfterMs)) {
    throw new Error(`${where}: promoteAfterMs must be a non-negative integer, got ${JSON.stringify(options.promoteAfterMs)}`);
  }
}

function toListed(name: string, options: ToolOptions): ListedTool {
  const { input, output } = schemasOf({ name, options });
  if (input.json.type !== 'object') {
    throw new Error(`Tool ${JSON.stringify(name)}: inputSchema must describe an object, got type ${JSON.stringify(input.json.type)}`);
  }
  return {
    name,
    ...definedProps({ title: options.title, description: options.description }),
    inputSchema: input.json,
    ...(output ? { outputSchema: output.json } : {}),
    ...(options.annotations ? { annotations: { ...options.annotations } } : {}),
  };
}
