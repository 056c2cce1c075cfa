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
import type { PromptDefinition } from '../prompts/PromptDefinition.js';
import type { ResourceDefinition, ResourceTemplateDefinition } from '../resources/ResourceDefinition.js';
import type { ToolDefinition } from '../tools/ToolDefinition.js';
import { ConfigSchema, type TaskvisorConfig, type ToolModuleEntry } from './schema.js';
import { ensureTypeScriptLoader, isTypeScriptModule, toolModuleUrl } from './typescriptLoader.js';

/** Config files larger than this are refused before parsing. */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/** Deepest `[`/`{` nesting accepted in a config file (the format itself needs 4); refused before parsing. */
export const MAX_CONFIG_NESTING = 32;

/** Most alias expansions accepted (YAML "billion laughs" protection). */
export const MAX_CONFIG_ALIASES = 100;

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
    const info = await stat(absolute);
    // A directory, FIFO or device (e.g. /dev/zero, which never ends) is refused before any read.
    if (!info.isFile())
      throw new ConfigError(
        `${file}: the config path is ${info.isDirectory() ? 'a directory' : 'not a regular file'}; expected a YAML or JSON file`,
      );
    size = info.size;
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`${file}: cannot read the config file: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  if (size > MAX_CONFIG_BYTES) {
    throw new ConfigError(`${file}: the config file is ${size} bytes; the limit is ${MAX_CONFIG_BYTES}`);
  }
  let bytes: Buffer;
  try {
    bytes = await readFile(absolute);
  } catch (error) {
    throw new ConfigError(`${file}: cannot read the config file: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  // Read past the size seen by stat (the file grew): still bounded.
  if (bytes.length > MAX_CONFIG_BYTES) throw new ConfigError(`${file}: the config file is over ${MAX_CONFIG_BYTES} bytes`);
  const text = decodeUtf8(bytes, file);
  const { config, positionOf } = parseConfigDocument(text, file);
  return { file: absolute, config, positionOf };
}

/** Parses and validates config text; `file` is only used in messages. */
export function parseConfig(text: string, file: string): TaskvisorConfig {
  return parseConfigDocument(text, file).config;
}

/** The text of a UTF-8 file; invalid bytes are an error naming their line and column, never replaced silently. */
function decodeUtf8(bytes: Buffer, file: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    // Find the first bad byte: the longest prefix that decodes.
    let good = 0;
    let bad = bytes.length;
    while (bad - good > 1) {
      const middle = (good + bad) >> 1;
      try {
        new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, middle));
        good = middle;
      } catch {
        bad = middle;
      }
    }
    // A prefix can end inside a valid multi-byte sequence; step back to a character boundary.
    const before = bytes.subarray(0, good).toString('utf8');
    const lines = before.split('\n');
    const line = lines.length;
    const col = [...lines.at(-1)!].length + 1;
    throw new ConfigError(
      `${file}:${line}:${col}: the config file is not valid UTF-8 (byte 0x${bytes[good]!.toString(16).padStart(2, '0')} at offset ${good})`,
    );
  }
}

/** The first `[`/`{` deeper than `max`, outside quoted strings and comments, as `:line:col`; or undefined. */
function tooDeep(text: string, max: number): string | undefined {
  let depth = 0;
  let line = 1;
  let lineStart = 0;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n') {
      line++;
      lineStart = i + 1;
      if (quote === undefined) continue;
    }
    if (quote) {
      if (quote === '"' && c === '\\') i++;
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) {
      const end = text.indexOf('\n', i);
      i = (end === -1 ? text.length : end) - 1;
    } else if (c === '[' || c === '{') {
      if (++depth > max) return `:${line}:${i - lineStart + 1}`;
    } else if (c === ']' || c === '}') depth = Math.max(0, depth - 1);
  }
  return undefined;
}

/** Throws a ConfigError at the position JSON.parse names when `text` is not strict JSON. */
function checkStrictJson(text: string, file: string): void {
  try {
    JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message;
    const offset = Number(/at position (\d+)/.exec(message)?.[1] ?? NaN);
    let where = '';
    if (Number.isInteger(offset)) {
      const lines = text.slice(0, offset).split('\n');
      where = `:${lines.length}:${lines.at(-1)!.length + 1}`;
    }
    throw new ConfigError(`${file}${where}: invalid JSON: ${message.replace(/ in JSON at position \d+.*$/, '')}`);
  }
}

function parseConfigDocument(text: string, file: string): Pick<Required<LoadedConfig>, 'config' | 'positionOf'> {
  const lineCounter = new LineCounter();
  // Refused before parsing: the YAML parser recurses per level and would run out of stack.
  const deep = tooDeep(text, MAX_CONFIG_NESTING);
  if (deep) throw new ConfigError(`${file}${deep}: the config nests deeper than ${MAX_CONFIG_NESTING} levels`);
  // YAML is a superset of JSON but more lenient (trailing commas, comments): a .json file must be strict JSON.
  if (file.endsWith('.json')) checkStrictJson(text, file);
  // One parser gives positions for both.
  let doc: Document;
  try {
    doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  } catch (error) {
    throw new ConfigError(`${file}: invalid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${(error as Error).message}`);
  }
  if (doc.errors.length > 0) {
    const first = doc.errors[0]!;
    // `linePos` is only filled in with prettyErrors; `pos` (offsets) always is.
    const at = first.linePos?.[0] ?? (first.pos ? lineCounter.linePos(first.pos[0]) : undefined);
    const where = at ? `:${at.line}:${at.col}` : '';
    // Block nesting (indentation) is not caught by the bracket scan; the parser reports its stack overflow as an error.
    const reason = /Maximum call stack/.test(first.message) ? 'the config nests too deeply to parse' : first.message.split('\n')[0];
    throw new ConfigError(`${file}${where}: invalid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${reason}`);
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: MAX_CONFIG_ALIASES }) ?? {};
  } catch (error) {
    // yaml throws a ReferenceError for an alias bomb ("billion laughs") and for an alias to nothing.
    const reason = /Excessive alias count/.test((error as Error).message)
      ? `YAML aliases expand too much (more than ${MAX_CONFIG_ALIASES} alias uses): refused as a resource exhaustion attempt`
      : (error as Error).message;
    throw new ConfigError(`${file}: invalid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${reason}`);
  }
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

/** What a config module may export: the domain's definitions (the runtime's `Definition`, which sits above config). */
type ModuleDefinition = ToolDefinition | ResourceDefinition | ResourceTemplateDefinition | PromptDefinition;

/** The config keys naming modules; each module may export any kind of definition. */
const MODULE_KEYS = ['tools', 'resources', 'prompts'] as const;

/**
 * Imports the modules named in `tools`, `resources` and `prompts`. A module
 * exports definitions (`defineTool`, `defineResource`,
 * `defineResourceTemplate`, `definePrompt`) as its default export or under
 * the key's name (`tools`, `resources`, `prompts`), or a function that
 * registers them on the runtime it is given.
 */
export async function loadToolModules(
  loaded: LoadedConfig,
  register: { use(...definitions: ModuleDefinition[]): unknown; tool(...args: never[]): unknown },
): Promise<void> {
  for (const key of MODULE_KEYS) {
    const entries: ToolModuleEntry[] = loaded.config[key] ?? [];
    for (const [index, entry] of entries.entries()) await loadModule(loaded, key, index, entry, register);
  }
}

async function loadModule(
  loaded: LoadedConfig,
  key: (typeof MODULE_KEYS)[number],
  index: number,
  entry: ToolModuleEntry,
  register: { use(...definitions: ModuleDefinition[]): unknown },
): Promise<void> {
  const modulePath = typeof entry === 'string' ? entry : entry.module;
  const exportName = typeof entry === 'string' ? undefined : entry.export;
  const at = typeof entry === 'string' ? [key, index] : [key, index, 'module'];
  const where = `${loaded.file}${loaded.positionOf?.(at) ?? ''}: ${key}[${index}]${typeof entry === 'string' ? '' : '.module'}`;
  const absolute = resolveFromConfig(loaded, modulePath);
  if (isTypeScriptModule(absolute)) {
    try {
      await ensureTypeScriptLoader();
    } catch (error) {
      throw new ConfigError(`${where}: ${modulePath}: ${(error as Error).message}`);
    }
  }
  let mod: Record<string, unknown>;
  try {
    mod = (await import(toolModuleUrl(pathToFileURL(absolute).href))) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`${where}: cannot load ${modulePath} (${absolute}): ${(error as Error).message.split('\n')[0]}`);
  }
  const exported = exportName ? mod[exportName] : (mod.default ?? mod[key]);
  if (exported === undefined) {
    throw new ConfigError(`${where}: ${modulePath} has no export ${exportName ? JSON.stringify(exportName) : `"default" or "${key}"`}`);
  }
  try {
    if (typeof exported === 'function') {
      await (exported as (registrar: unknown) => unknown)(register);
    } else {
      const definitions: unknown[] = Array.isArray(exported) ? exported : [exported];
      assertDefinitions(definitions);
      register.use(...definitions);
    }
  } catch (error) {
    throw new ConfigError(`${where}: ${modulePath}: ${(error as Error).message}`);
  }
}

/** Throws at the first item that is not a definition (a module's export, checked before anything is registered). */
function assertDefinitions(definitions: unknown[]): asserts definitions is ModuleDefinition[] {
  for (const [i, definition] of definitions.entries()) {
    if (!isDefinition(definition)) {
      throw new Error(`export item ${i} is not a definition (use defineTool, defineResource, defineResourceTemplate or definePrompt)`);
    }
  }
}

/** A `defineTool` value, or a resource, resource template or prompt definition. */
function isDefinition(value: unknown): value is ModuleDefinition {
  if (value === null || typeof value !== 'object') return false;
  const candidate = value as Partial<ToolDefinition> & { kind?: unknown; uri?: unknown; uriTemplate?: unknown; read?: unknown };
  if (typeof candidate.name !== 'string') return false;
  switch (candidate.kind) {
    case undefined:
      return typeof candidate.handler === 'function' && typeof candidate.options === 'object';
    case 'resource':
      return typeof candidate.uri === 'string' && typeof candidate.read === 'function';
    case 'resourceTemplate':
      return typeof candidate.uriTemplate === 'string' && typeof candidate.read === 'function';
    case 'prompt':
      return typeof candidate.handler === 'function';
    default:
      return false;
  }
}
