/**
 * A tool's argument or `structuredContent` schema, given either as a zod
 * schema or as a JSON Schema document: what `tools/list`
 * publishes and how a value is checked against it.
 *
 * A JSON Schema is published exactly as given (`$schema`, `$defs`, `$ref`
 * kept) and checked with Ajv — draft 2020-12 unless its `$schema` names
 * draft-07 or 2019-09 (MCP's default dialect is 2020-12). A zod schema is
 * published as zod renders it and checked by zod.
 */
import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { z } from 'zod';
import type { JsonObject } from '../core/json.js';

/** A JSON Schema document: a plain object (an object schema, for arguments). */
export type JsonSchemaDocument = { [key: string]: unknown };

/** A schema as a tool may give it. */
export type SchemaInput = z.ZodType<JsonObject> | JsonSchemaDocument;

/** The outcome of checking a value: the value (zod may transform it) or what is wrong, one line per problem. */
export type SchemaCheck = { ok: true; value: JsonObject } | { ok: false; problems: string[] };

export interface ToolSchema {
  /** What `tools/list` publishes. */
  readonly json: JsonObject;
  check(value: unknown): SchemaCheck;
}

/** Whether `schema` is a zod schema (rather than a JSON Schema document). */
export function isZodSchema(schema: unknown): schema is z.ZodType {
  return schema instanceof z.ZodType || (typeof schema === 'object' && schema !== null && '_zod' in schema);
}

/** Builds the schema of `tool`'s `field`; a schema that cannot be published or compiled is an error naming both. */
export function toolSchema(tool: string, field: 'inputSchema' | 'outputSchema', schema: SchemaInput): ToolSchema {
  const where = `Tool ${JSON.stringify(tool)}: ${field}`;
  if (isZodSchema(schema)) {
    let json: JsonObject;
    try {
      json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'throw' });
    } catch (error) {
      throw new Error(`${where} cannot be expressed as JSON Schema: ${(error as Error).message}`);
    }
    delete json.$schema;
    return {
      json,
      check: (value) => {
        const parsed = schema.safeParse(value);
        if (parsed.success) return { ok: true, value: parsed.data };
        return {
          ok: false,
          problems: parsed.error.issues.map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`),
        };
      },
    };
  }
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw new Error(`${where} must be a zod schema or a JSON Schema object`);
  }
  const json = structuredClone<JsonObject>(schema);
  let validate: ValidateFunction;
  try {
    validate = validatorFor(json).compile(json);
  } catch (error) {
    throw new Error(`${where} is not a valid JSON Schema: ${(error as Error).message}`);
  }
  return {
    json,
    check: (value) =>
      validate(value) ? { ok: true, value: value as JsonObject } : { ok: false, problems: describe(validate.errors ?? []) },
  };
}

/** The compiled schemas of a tool, made once per tool definition. */
const compiled = new WeakMap<SchemaOptions, { input: ToolSchema; output?: ToolSchema }>();

/** The part of a tool's options this module reads (structural: `ToolDefinition` imports this module). */
interface SchemaOptions {
  inputSchema?: SchemaInput | undefined;
  outputSchema?: SchemaInput | undefined;
}

/** `tool`'s argument schema (any object when it declared none) and its `structuredContent` schema. */
export function schemasOf(tool: { name: string; options: SchemaOptions }): { input: ToolSchema; output?: ToolSchema } {
  let schemas = compiled.get(tool.options);
  if (!schemas) {
    const { inputSchema, outputSchema } = tool.options;
    schemas = {
      input: inputSchema === undefined ? anyObject() : toolSchema(tool.name, 'inputSchema', inputSchema),
      ...(outputSchema ? { output: toolSchema(tool.name, 'outputSchema', outputSchema) } : {}),
    };
    compiled.set(tool.options, schemas);
  }
  return schemas;
}

/**
 * The argument schema of a tool that declared none: any object. Checked
 * without Ajv (Ajv costs start-up time, and only a tool with a
 * JSON Schema of its own needs it), with Ajv's wording for the one problem.
 */
function anyObject(): ToolSchema {
  return {
    json: { type: 'object', properties: {} },
    check: (value) =>
      typeof value === 'object' && value !== null && !Array.isArray(value)
        ? { ok: true, value: value as JsonObject }
        : { ok: false, problems: ['(root): must be object'] },
  };
}

/** `schema` compiled with Ajv in its dialect (see {@link toolSchema}); throws for a schema Ajv cannot compile. */
export function compileJsonSchema(schema: JsonObject): ValidateFunction {
  return validatorFor(schema).compile(schema);
}

type AjvInstance = { compile(schema: object): ValidateFunction };
type AjvClass = new (options: object) => AjvInstance;

const require = createRequire(import.meta.url);
const validators = new Map<string, AjvInstance>();

/**
 * One Ajv per dialect. `strict: false`: a published schema may carry
 * keywords Ajv does not know (`title`, vendor extensions) without being
 * refused; `allErrors` so a caller learns every problem at once.
 */
function validatorFor(schema: JsonObject): AjvInstance {
  const dialect = typeof schema.$schema === 'string' ? schema.$schema : '';
  const module = /draft-07|draft-06|draft-04/.test(dialect) ? 'ajv' : /2019-09/.test(dialect) ? 'ajv/dist/2019' : 'ajv/dist/2020';
  let ajv = validators.get(module);
  if (!ajv) {
    const Ajv = (require(module) as { default: AjvClass }).default;
    // addUsedSchema false: two tools (or one registered twice) may use the same $id.
    ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true, addUsedSchema: false });
    (require('ajv-formats') as { default: (ajv: AjvInstance) => void }).default(ajv);
    validators.set(module, ajv);
  }
  return ajv;
}

/** Ajv's errors as `path: message` lines, the same shape as zod's. */
function describe(errors: ErrorObject[]): string[] {
  return errors.map((error) => {
    const path = error.instancePath ? error.instancePath.slice(1).replaceAll('/', '.') : '(root)';
    const extra = error.keyword === 'additionalProperties' ? ` (${String(error.params.additionalProperty)})` : '';
    return `${path}: ${error.message ?? 'is invalid'}${extra}`;
  });
}
