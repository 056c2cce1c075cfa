/**
 * The resources and resource templates a runtime serves, plus the URI spaces
 * of upstream servers the aggregator forwards (`<namespace>-<prefix>+<uri>`,
 * docs/aggregator.md). Reading a URI is resolved by the protocol layer (it
 * owns RFC 6570 matching); this registry only keeps what is registered and
 * tells listeners when that changes (one `list_changed` per change).
 */
import type {
  ListedResource,
  ListedResourceTemplate,
  ReadResourceResult,
  ResourceContext,
  ResourceDefinition,
  ResourceTemplateDefinition,
} from './ResourceDefinition.js';

/** Resource and template names: 1–128 characters, any but control characters. */
const NAME = /^[^\u0000-\u001f]{1,128}$/;
/** A URI as `resources/read` names it: a scheme, then anything without whitespace (RFC 3986 §3.1). */
const URI = /^[A-Za-z][A-Za-z0-9+.-]*:\S*$/;

/** An upstream server's resources, served under a URI prefix only it may use. */
export interface ForwardedResourceSpace {
  /** Every URI of this space starts with it (`x-everything+`). */
  prefix: string;
  resources: ListedResource[];
  templates: ListedResourceTemplate[];
  /** Reads a URI of this space (the prefixed one). */
  read(uri: string, ctx: ResourceContext): Promise<ReadResourceResult>;
  /** Completes a variable of one of `templates` (named by its prefixed `uriTemplate`). */
  complete?(uriTemplate: string, argument: { name: string; value: string }, context: Record<string, string>): Promise<CompletionAnswer>;
}

/** What `completion/complete` answers. */
export interface CompletionAnswer {
  values: string[];
  total?: number;
  hasMore?: boolean;
}

export class ResourceRegistry {
  private readonly resources = new Map<string, ResourceDefinition>();
  private readonly templates = new Map<string, ResourceTemplateDefinition>();
  private readonly spaces = new Map<string, ForwardedResourceSpace>();
  private readonly reserved = new Set<string>();
  private readonly listeners = new Set<() => void>();
  private readonly updateListeners = new Set<(uri: string) => void>();
  private completesValue: boolean | undefined;

  /** Registers a resource; a malformed or taken URI or name is refused with an error naming it. */
  add(definition: ResourceDefinition): void {
    const where = `Resource ${JSON.stringify(definition.name)}`;
    checkName('Resource', definition.name);
    if (typeof definition.uri !== 'string' || !URI.test(definition.uri)) {
      throw new Error(`${where}: uri must be an absolute URI (scheme:...), got ${JSON.stringify(definition.uri)}`);
    }
    this.checkNotReserved(where, definition.uri);
    if (this.resources.has(definition.uri)) throw new Error(`A resource with uri ${JSON.stringify(definition.uri)} is already registered`);
    if (typeof definition.read !== 'function') throw new Error(`${where}: the reader must be a function`);
    this.resources.set(definition.uri, { ...definition, options: { ...(definition.options ?? {}) } });
    this.changed();
  }

  /** Registers a resource template; names are unique among templates. */
  addTemplate(definition: ResourceTemplateDefinition): void {
    const where = `Resource template ${JSON.stringify(definition.name)}`;
    checkName('Resource template', definition.name);
    if (typeof definition.uriTemplate !== 'string' || !/^[A-Za-z{]/.test(definition.uriTemplate) || /\s/.test(definition.uriTemplate)) {
      throw new Error(`${where}: uriTemplate must be an RFC 6570 URI template, got ${JSON.stringify(definition.uriTemplate)}`);
    }
    this.checkNotReserved(where, definition.uriTemplate);
    if (this.templates.has(definition.name))
      throw new Error(`A resource template named ${JSON.stringify(definition.name)} is already registered`);
    if (typeof definition.read !== 'function') throw new Error(`${where}: the reader must be a function`);
    const options = definition.options ?? {};
    for (const [variable, completer] of Object.entries(options.complete ?? {})) {
      if (typeof completer !== 'function') throw new Error(`${where}: complete.${variable} must be a function`);
    }
    if (options.list !== undefined && typeof options.list !== 'function') throw new Error(`${where}: list must be a function`);
    this.templates.set(definition.name, { ...definition, options: { ...options } });
    this.changed();
  }

  /** Removes the resource with `uri`; `true` when it existed. */
  remove(uri: string): boolean {
    const removed = this.resources.delete(uri);
    if (removed) this.changed();
    return removed;
  }

  /** Removes the template named `name`; `true` when it existed. */
  removeTemplate(name: string): boolean {
    const removed = this.templates.delete(name);
    if (removed) this.changed();
    return removed;
  }

  /** Reserves URIs starting with `prefix` for forwarded spaces (the aggregator's). */
  reserve(prefix: string): void {
    for (const uri of [...this.resources.keys(), ...[...this.templates.values()].map((t) => t.uriTemplate)]) {
      if (uri.startsWith(prefix))
        throw new Error(`Resource ${JSON.stringify(uri)} uses the prefix ${JSON.stringify(prefix)} reserved for upstream resources`);
    }
    this.reserved.add(prefix);
  }

  /** Serves `space` (replacing the space with the same prefix), or stops serving `prefix` when `space` is undefined. */
  replaceForwarded(prefix: string, space: ForwardedResourceSpace | undefined): void {
    const had = this.spaces.delete(prefix);
    if (space) this.spaces.set(prefix, space);
    if (had || space) this.changed();
  }

  get(uri: string): ResourceDefinition | undefined {
    return this.resources.get(uri);
  }

  /** The forwarded space owning `uri`, if any. */
  spaceOf(uri: string): ForwardedResourceSpace | undefined {
    for (const space of this.spaces.values()) if (uri.startsWith(space.prefix)) return space;
    return undefined;
  }

  /** Registered templates, in registration order. */
  templateDefinitions(): ResourceTemplateDefinition[] {
    return [...this.templates.values()];
  }

  /** Whether anything is served (the `resources` capability is advertised only then). */
  get size(): number {
    return this.resources.size + this.templates.size + this.spaces.size;
  }

  /** Whether any template variable can be completed (local or forwarded); read on every request, kept per change. */
  get completes(): boolean {
    this.completesValue ??=
      [...this.templates.values()].some((t) => Object.keys(t.options.complete ?? {}).length > 0) ||
      [...this.spaces.values()].some((space) => space.complete !== undefined && space.templates.length > 0);
    return this.completesValue;
  }

  /** `resources/list` entries: fixed resources, then what templates list, then forwarded ones. */
  async list(ctx: ResourceContext): Promise<ListedResource[]> {
    const listed: ListedResource[] = [...this.resources.values()].map((r) => ({ uri: r.uri, name: r.name, ...r.options }));
    for (const template of this.templates.values()) {
      if (template.options.list) listed.push(...(await template.options.list(ctx)));
    }
    for (const space of this.spaces.values()) listed.push(...space.resources);
    return listed;
  }

  /** `resources/templates/list` entries. */
  listTemplates(): ListedResourceTemplate[] {
    const listed: ListedResourceTemplate[] = [...this.templates.values()].map(({ name, uriTemplate, options }) => {
      const { complete: _complete, list: _list, ...metadata } = options;
      return { uriTemplate, name, ...metadata };
    });
    for (const space of this.spaces.values()) listed.push(...space.templates);
    return listed;
  }

  /**
   * Says the content of the resource at `uri` changed: clients that
   * subscribed to it get `notifications/resources/updated` (`resources/subscribe`
   * on a 2025-11-25 connection, a listen's `resourceSubscriptions` on 2026-07-28).
   */
  notifyUpdated(uri: string): void {
    if (typeof uri !== 'string' || uri.length === 0) throw new TypeError('notifyUpdated(uri): uri must be a non-empty string');
    for (const listener of this.updateListeners) listener(uri);
  }

  /** Calls `listener` with every URI {@link notifyUpdated} names; returns the unsubscribe function. */
  onUpdated(listener: (uri: string) => void): () => void {
    this.updateListeners.add(listener);
    return () => this.updateListeners.delete(listener);
  }

  /** Calls `listener` after every change; returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private checkNotReserved(where: string, uri: string): void {
    for (const prefix of this.reserved) {
      if (uri.startsWith(prefix))
        throw new Error(`${where}: URIs starting with ${JSON.stringify(prefix)} are reserved for upstream resources`);
    }
  }

  private changed(): void {
    this.completesValue = undefined;
    for (const listener of this.listeners) listener();
  }
}

function checkName(what: string, name: unknown): void {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new Error(`Invalid ${what.toLowerCase()} name ${JSON.stringify(name)}: use 1-128 printable characters`);
  }
}
