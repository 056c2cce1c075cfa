/**
 * A tool's input schema as the terminal needs it: `taskvisor tools` lists
 * its arguments, and `taskvisor call` reads each `--arg K=V` by the type the
 * schema gives K (so `version=1.2` stays a string where a string is wanted)
 * and refuses a value outside an enum, naming the allowed ones.
 */

/** A tool as tools/list describes it (the members read here). */
export interface ToolListing {
  name: string;
  description?: string | undefined;
  inputSchema?: { properties?: Record<string, unknown> | undefined; required?: string[] | undefined } | undefined;
}

/** One argument of a tool. */
export interface ArgumentDescription {
  name: string;
  /** `string`, `integer`, `number|null`, `array of string`, …; `any` when the schema says nothing. */
  type: string;
  required: boolean;
  /** The allowed values (`enum`, `const`, or a `oneOf`/`anyOf` of consts). */
  values?: unknown[];
  description?: string;
}

interface PropertySchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  oneOf?: PropertySchema[];
  anyOf?: PropertySchema[];
  items?: PropertySchema;
  description?: string;
}

/** The arguments of a tool, in the schema's order. */
export function describeArguments(tool: ToolListing): ArgumentDescription[] {
  const required = new Set(tool.inputSchema?.required ?? []);
  return Object.entries(tool.inputSchema?.properties ?? {}).map(([name, raw]) => {
    const property = (raw ?? {}) as PropertySchema;
    const values = allowedValues(property);
    return {
      name,
      type: typeText(property),
      required: required.has(name),
      ...(values ? { values } : {}),
      ...(property.description ? { description: property.description } : {}),
    };
  });
}

function typesOf(property: PropertySchema): string[] {
  if (Array.isArray(property.type)) return property.type;
  if (property.type !== undefined) return [property.type];
  const branches = property.anyOf ?? property.oneOf;
  return branches ? [...new Set(branches.flatMap(typesOf))] : [];
}

function typeText(property: PropertySchema): string {
  const types = typesOf(property);
  if (types.length === 0) return property.enum || property.const !== undefined ? 'enum' : 'any';
  return types.map((type) => (type === 'array' && property.items ? `array of ${typeText(property.items)}` : type)).join('|');
}

function allowedValues(property: PropertySchema): unknown[] | undefined {
  if (property.enum) return property.enum;
  if (property.const !== undefined) return [property.const];
  const branches = property.oneOf ?? property.anyOf;
  if (branches && branches.length > 0 && branches.every((branch) => branch.const !== undefined || branch.enum)) {
    return branches.flatMap((branch) => branch.enum ?? [branch.const]);
  }
  return undefined;
}

/** A `--arg K=V` that the tool's schema refuses: the message names the allowed values. */
export class ArgumentError extends Error {}

/**
 * `raw` (the V of `--arg K=V`) as the value the schema wants for `name`: a
 * string field gets the text as it is; a number, integer or boolean field
 * parses it (and refuses what does not parse); an array or object field, or
 * a field the schema does not describe, takes JSON when it parses and the
 * text otherwise. A value outside the field's allowed values is refused.
 */
export function coerceArgument(tool: ToolListing | undefined, name: string, raw: string): unknown {
  const property = tool?.inputSchema?.properties?.[name] as PropertySchema | undefined;
  const types = property ? typesOf(property) : [];
  let value: unknown;
  if (types.includes('string') && !(raw === 'null' && types.includes('null'))) value = raw;
  else if (types.length > 0 && types.every((type) => ['number', 'integer', 'boolean', 'null'].includes(type))) {
    value = parseScalar(raw, types);
    if (value === undefined)
      throw new ArgumentError(`--arg ${name}=${raw}: ${name} takes ${types.map((type) => TYPE_WORDS[type]).join(' or ')}`);
  } else value = jsonOrText(raw);
  const values = property ? allowedValues(property) : undefined;
  // An enum without a type: `--arg size=10` picks the string "10" when that is the allowed one.
  if (values && !values.includes(value) && values.includes(raw)) value = raw;
  if (values && !values.some((allowed) => allowed === value)) {
    throw new ArgumentError(`--arg ${name}=${raw}: ${name} must be one of ${values.map((allowed) => JSON.stringify(allowed)).join(', ')}`);
  }
  return value;
}

const TYPE_WORDS: Record<string, string> = { number: 'a number', integer: 'an integer', boolean: 'true or false', null: 'null' };

function parseScalar(raw: string, types: string[]): unknown {
  if (types.includes('null') && raw === 'null') return null;
  if (types.includes('boolean') && (raw === 'true' || raw === 'false')) return raw === 'true';
  const number = raw.trim() === '' ? NaN : Number(raw);
  if (Number.isFinite(number) && (types.includes('number') || (types.includes('integer') && Number.isInteger(number)))) return number;
  return undefined;
}

function jsonOrText(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}
