/**
 * A workflow's `args` as the zod schema of its tool: types, `enum`,
 * `pattern`, `minimum`/`maximum`, defaults and descriptions all reach the
 * advertised JSON Schema and the argument check of every call.
 */
import { z } from 'zod';
import type { JsonObject } from '../../core/json.js';
import type { WorkflowArg } from './definition.js';

/** Builds the schema; throws an error naming the argument for a bad pattern or default. */
export function argsSchema(args: Record<string, WorkflowArg> | undefined): z.ZodType<JsonObject> {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, arg] of Object.entries(args ?? {})) shape[name] = argSchema(name, arg);
  // Extra arguments are dropped, not refused: muster tolerates them, and a caller may pass more than one version needs.
  return z.object(shape);
}

function argSchema(name: string, arg: WorkflowArg): z.ZodType {
  let schema: z.ZodType = baseSchema(name, arg);
  if (arg.description !== undefined) schema = schema.describe(arg.description);
  if (arg.default !== undefined) {
    const checked = schema.safeParse(arg.default);
    if (!checked.success) throw new Error(`args.${name}.default: ${checked.error.issues[0]?.message ?? 'does not match the argument'}`);
    return schema.default(arg.default);
  }
  return arg.required ? schema : schema.optional();
}

/**
 * muster's words for an argument left out or of the wrong type (its clients
 * match on them): `required field missing`, `wrong type: expected …`.
 */
const missing = {
  error: (issue: { input?: unknown; expected?: unknown }) =>
    issue.input === undefined
      ? 'required field missing'
      : issue.expected !== undefined
        ? `wrong type: expected ${String(issue.expected)}, received ${Array.isArray(issue.input) ? 'array' : issue.input === null ? 'null' : typeof issue.input}`
        : undefined,
};

function baseSchema(name: string, arg: WorkflowArg): z.ZodType {
  const onlyFor = (field: string, types: string[]) => {
    if (!types.includes(arg.type)) throw new Error(`args.${name}.${field}: only allowed for ${types.join(' or ')} arguments`);
  };
  if (arg.pattern !== undefined) onlyFor('pattern', ['string']);
  if (arg.minimum !== undefined) onlyFor('minimum', ['number', 'integer']);
  if (arg.maximum !== undefined) onlyFor('maximum', ['number', 'integer']);
  if (arg.enum !== undefined) {
    onlyFor('enum', ['string', 'number', 'integer', 'boolean']);
    const wrong = arg.enum.find((value) => typeof value !== (arg.type === 'integer' ? 'number' : arg.type));
    if (wrong !== undefined) throw new Error(`args.${name}.enum: ${JSON.stringify(wrong)} is not a ${arg.type}`);
    const literals = arg.enum.map((value) => z.literal(value));
    // z.union wants a tuple of at least two: the first two spelled out (length >= 2 on that branch).
    return literals.length === 1 ? literals[0]! : z.union([literals[0]!, literals[1]!, ...literals.slice(2)]);
  }
  switch (arg.type) {
    case 'string': {
      let schema = z.string(missing);
      if (arg.pattern !== undefined) {
        let regex: RegExp;
        try {
          regex = new RegExp(arg.pattern);
        } catch (error) {
          throw new Error(`args.${name}.pattern: ${(error as Error).message}`);
        }
        schema = schema.regex(regex, `must match ${arg.pattern}`);
      }
      return schema;
    }
    case 'number':
    case 'integer': {
      let schema = arg.type === 'integer' ? z.number(missing).int() : z.number(missing);
      if (arg.minimum !== undefined) schema = schema.min(arg.minimum);
      if (arg.maximum !== undefined) schema = schema.max(arg.maximum);
      return schema;
    }
    case 'boolean':
      return z.boolean(missing);
    case 'object':
      return z.record(z.string(), z.unknown(), missing);
    case 'array':
      return z.array(z.unknown(), missing);
  }
}
