/**
 * The prompts a runtime serves, local ones and the aggregator's forwarded
 * upstream prompts (namespaced like tools, docs/aggregator.md). Listeners
 * hear of every change (one `notifications/prompts/list_changed`).
 */
import type { ForwardedPrompt, ListedPrompt, PromptDefinition } from './PromptDefinition.js';

/** Prompt names: like tool names, 1–128 of `A-Z a-z 0-9 _ - .` */
const PROMPT_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

export class PromptRegistry {
  private readonly prompts = new Map<string, PromptDefinition>();
  private readonly forwarded = new Map<string, ForwardedPrompt>();
  private readonly reserved = new Set<string>();
  private readonly listeners = new Set<() => void>();
  private completesValue: boolean | undefined;

  /** Registers a prompt; a duplicate or malformed name, or a malformed argument list, is refused with an error naming it. */
  add(definition: PromptDefinition): void {
    const { name } = definition;
    if (typeof name !== 'string' || !PROMPT_NAME.test(name)) {
      throw new Error(`Invalid prompt name ${JSON.stringify(name)}: use 1-128 characters of A-Z a-z 0-9 _ - .`);
    }
    for (const prefix of this.reserved) {
      if (name.startsWith(prefix))
        throw new Error(`Prompt ${JSON.stringify(name)}: names starting with ${JSON.stringify(prefix)} are reserved for upstream prompts`);
    }
    if (this.prompts.has(name) || this.forwarded.has(name)) throw new Error(`A prompt named ${JSON.stringify(name)} is already registered`);
    if (typeof definition.handler !== 'function') throw new Error(`Prompt ${JSON.stringify(name)}: the handler must be a function`);
    const options = definition.options ?? {};
    const seen = new Set<string>();
    for (const argument of options.arguments ?? []) {
      if (typeof argument?.name !== 'string' || argument.name.length === 0) {
        throw new Error(`Prompt ${JSON.stringify(name)}: every argument needs a non-empty name`);
      }
      if (seen.has(argument.name))
        throw new Error(`Prompt ${JSON.stringify(name)}: argument ${JSON.stringify(argument.name)} is declared twice`);
      seen.add(argument.name);
      if (argument.complete !== undefined && typeof argument.complete !== 'function') {
        throw new Error(`Prompt ${JSON.stringify(name)}: argument ${JSON.stringify(argument.name)}: complete must be a function`);
      }
    }
    this.prompts.set(name, { ...definition, options: { ...options } });
    this.changed();
  }

  /** Removes the prompt `name`; `true` when it existed. */
  remove(name: string): boolean {
    const removed = this.prompts.delete(name);
    if (removed) this.changed();
    return removed;
  }

  /** Reserves names starting with `prefix` for forwarded prompts (the aggregator's namespace). */
  reserve(prefix: string): void {
    for (const name of this.prompts.keys()) {
      if (name.startsWith(prefix))
        throw new Error(`Prompt ${JSON.stringify(name)} uses the prefix ${JSON.stringify(prefix)} reserved for upstream prompts`);
    }
    this.reserved.add(prefix);
  }

  /** Replaces every forwarded prompt whose name starts with `prefix` by `entries`, with one change notification. */
  replaceForwarded(prefix: string, entries: ForwardedPrompt[]): void {
    let changed = false;
    for (const name of [...this.forwarded.keys()]) {
      if (name.startsWith(prefix)) changed = this.forwarded.delete(name) || changed;
    }
    for (const entry of entries) {
      if (!this.prompts.has(entry.listed.name) && PROMPT_NAME.test(entry.listed.name)) {
        this.forwarded.set(entry.listed.name, entry);
        changed = true;
      }
    }
    if (changed) this.changed();
  }

  get(name: string): PromptDefinition | undefined {
    return this.prompts.get(name);
  }

  getForwarded(name: string): ForwardedPrompt | undefined {
    return this.forwarded.get(name);
  }

  /** Whether any prompt is served (the `prompts` capability is advertised only then). */
  get size(): number {
    return this.prompts.size + this.forwarded.size;
  }

  /** Whether any prompt argument can be completed; read on every request, kept per change. */
  get completes(): boolean {
    this.completesValue ??=
      [...this.prompts.values()].some((p) => (p.options.arguments ?? []).some((a) => a.complete !== undefined)) ||
      [...this.forwarded.values()].some((p) => p.complete !== undefined);
    return this.completesValue;
  }

  /** `prompts/list` entries. */
  list(): ListedPrompt[] {
    const local = [...this.prompts.values()].map(({ name, options }): ListedPrompt => {
      const { arguments: args, ...metadata } = options;
      return {
        name,
        ...metadata,
        ...(args ? { arguments: args.map(({ complete: _complete, ...argument }) => argument) } : {}),
      };
    });
    return [...local, ...[...this.forwarded.values()].map((p) => p.listed)];
  }

  /** Calls `listener` after every change; returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    this.completesValue = undefined;
    for (const listener of this.listeners) listener();
  }
}
