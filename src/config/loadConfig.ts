/**
 * Reads and validates a config file. Every error names the file, the line
 * and column where it can tell, the path and the field:
 *
 *   taskvisor.yaml:7:10: tasks.ttlMs: Invalid input: expected number, received string
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { isMap, isPair, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';
import type { ToolDefinition } from '../tools/ToolDefinition.js';
import { ConfigSchema, type TaskvisorConfig, type ToolModuleEntry } from './schema.js';

/** Config files larger than this are refused before parsing. */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/** A config problem; `message` is ready to print. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export interface LoadedConfig {
  /** Absolute path of the file. */
  file: string;
  config: TaskvisorConfig;
  /** `:line:col` of the value at `at` in the file, or `''` when unknown. */
  positionOf?: (at: readonly PropertyKey[]) => string;
}

/** Reads, parses and validates `file` (YAML, or JSON by its `.json` ending). */
export async function loadConfig(file: string): Promise<LoadedConfig> {
  const absolute = path.resolve(file);
  let size: number;
  try {
    size = (await stat(absolute)).size;
  } catch (error) {
    throw new ConfigError(`${file}: cannot read the config file: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  if (size > MAX_CONFIG_BYTES) {
    throw new ConfigError(`${file}: the config file is ${size} bytes; the limit is ${MAX_CONFIG_BYTES}`);
  }
  const text = await readFile(absolute, 'utf8');
  const { config, positionOf } = parseConfigDocument(text, file);
  return { file: absolute, config, positionOf };
}

/** Parses and validates config text; `file` is only used in messages. */
export function parseConfig(text: string, file: string): TaskvisorConfig {
  return parseConfigDocument(text, file).config;
}

function parseConfigDocument(text: string, file: string): Pick<Required<LoadedConfig>, 'config' | 'positionOf'> {
  const lineCounter = new LineCounter();
  // YAML is a superset of JSON, so one parser gives positions for both.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const first = doc.errors[0]!;
    // `linePos` is only filled in with prettyErrors; `pos` (offsets) always is.
    const at = first.linePos?.[0] ?? (first.pos ? lineCounter.linePos(first.pos[0]) : undefined);
    const where = at ? `:${at.line}:${at.col}` : '';
    throw new ConfigError(`${file}${where}: invalid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${first.message.split('\n')[0]}`);
  }
  const data = doc.toJS({ maxAliasCount: 100 }) ?? {};
  const parsed = ConfigSchema.safeParse(data);
  if (parsed.success) return { config: parsed.data, positionOf: (at) => position(doc, lineCounter, at, false) };
  const messages = parsed.error.issues.slice(0, 10).map((issue) => describeIssue(issue, doc, lineCounter, file));
  const more = parsed.error.issues.length > 10 ? `\n  … and ${parsed.error.issues.length - 10} more` : '';
  throw new ConfigError(messages.join('\n') + more);
}

function describeIssue(issue: z.core.$ZodIssue, doc: Document, lineCounter: LineCounter, file: string): string {
  if (issue.code === 'unrecognized_keys') {
    return issue.keys
      .map((key) => {
        const at = [...issue.path, key];
        return `${file}${position(doc, lineCounter, at, true)}: ${dotted(at)}: unknown field (allowed here: ${allowedKeys(issue.path)})`;
      })
      .join('\n');
  }
  return `${file}${position(doc, lineCounter, issue.path, false)}: ${dotted(issue.path) || '(top level)'}: ${issue.message}`;
}

/** `a.b[0].c` for a path (exported for other YAML files the runtime reads: workflows). */
export function dotted(at: readonly PropertyKey[]): string {
  return at.map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i > 0 ? '.' : ''}${String(part)}`)).join('');
}

/** `:line:col` of the node at `at` (or of its key), or of the nearest ancestor that exists. */
export function position(doc: Document, lineCounter: LineCounter, at: readonly PropertyKey[], wantKey: boolean): string {
  for (let depth = at.length; depth >= 0; depth--) {
    const parentPath = at.slice(0, Math.max(0, depth - 1));
    const key = depth > 0 ? at[depth - 1] : undefined;
    let offset: number | undefined;
    if (wantKey && depth === at.length && key !== undefined) {
      const parent = parentPath.length ? doc.getIn(parentPath as unknown[], true) : doc.contents;
      if (isMap(parent)) {
        const pair = parent.items.find((item) => isPair(item) && isScalar(item.key) && item.key.value === key);
        if (pair && isScalar(pair.key)) offset = pair.key.range?.[0];
      }
    }
    if (offset === undefined) {
      const node = doc.getIn(at.slice(0, depth) as unknown[], true) as { range?: [number, number, number] } | undefined;
      offset = node?.range?.[0];
    }
    if (offset !== undefined) {
      const { line, col } = lineCounter.linePos(offset);
      return `:${line}:${col}`;
    }
  }
  return '';
}

function allowedKeys(at: readonly PropertyKey[]): string {
  let schema: unknown = ConfigSchema;
  for (const part of at) {
    const shape = (schema as { shape?: Record<string, unknown> }).shape;
    if (!shape || typeof part !== 'string') return '…';
    schema = unwrap(shape[part]);
  }
  const shape = (unwrap(schema) as { shape?: Record<string, unknown> }).shape;
  return shape ? Object.keys(shape).join(', ') : '…';
}

function unwrap(schema: unknown): unknown {
  let current = schema as { unwrap?: () => unknown; def?: { innerType?: unknown } } | undefined;
  while (current && typeof current.unwrap === 'function') current = current.unwrap() as typeof current;
  return current;
}

/** Resolves a path from the config against the config file's folder. */
export function resolveFromConfig(loaded: LoadedConfig | undefined, target: string): string {
  return path.resolve(loaded ? path.dirname(loaded.file) : process.cwd(), target);
}

/**
 * Imports the tool modules named in `tools`. A module exports tool
 * definitions (`defineTool`) as its default export or `tools`, or a function
 * that registers them.
 */
export async function loadToolModules(
  loaded: LoadedConfig,
  register: { use(...definitions: ToolDefinition[]): unknown; tool(...args: never[]): unknown },
): Promise<void> {
  const entries: ToolModuleEntry[] = loaded.config.tools ?? [];
  for (const [index, entry] of entries.entries()) {
    const modulePath = typeof entry === 'string' ? entry : entry.module;
    const exportName = typeof entry === 'string' ? undefined : entry.export;
    const at = typeof entry === 'string' ? ['tools', index] : ['tools', index, 'module'];
    const where = `${loaded.file}${loaded.positionOf?.(at) ?? ''}: tools[${index}]${typeof entry === 'string' ? '' : '.module'}`;
    const absolute = resolveFromConfig(loaded, modulePath);
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
    } catch (error) {
      throw new ConfigError(`${where}: cannot load ${modulePath} (${absolute}): ${(error as Error).message.split('\n')[0]}`);
    }
    const exported = exportName ? mod[exportName] : (mod.default ?? mod.tools);
    if (exported === undefined) {
      throw new ConfigError(`${where}: ${modulePath} has no export ${exportName ? JSON.stringify(exportName) : '"default" or "tools"'}`);
    }
    try {
      if (typeof exported === 'function') {
        await (exported as (registrar: unknown) => unknown)(register);
      } else {
        const definitions = Array.isArray(exported) ? exported : [exported];
        for (const [i, definition] of definitions.entries()) {
          if (!isDefinition(definition)) {
            throw new Error(`export item ${i} is not a tool definition (use defineTool(name, options, handler))`);
          }
        }
        register.use(...(definitions as ToolDefinition[]));
      }
    } catch (error) {
      throw new ConfigError(`${where}: ${modulePath}: ${(error as Error).message}`);
    }
  }
}

function isDefinition(value: unknown): value is ToolDefinition {
  const candidate = value as ToolDefinition | null;
  return (
    candidate !== null &&
    typeof candidate === 'object' &&
    typeof candidate.name === 'string' &&
    typeof candidate.handler === 'function' &&
    typeof candidate.options === 'object'
  );
}
