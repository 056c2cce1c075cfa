/**
 * Whether a client's answer to a form elicitation fits the form: an
 * `accept` answer's `content` is checked against the `requestedSchema` of
 * the input request it answers (T-19: each answer is the result of that
 * request), so a tool never sees `name: 123` for a string field. `decline`
 * and `cancel` carry no content to check. The same check for `tasks/update`
 * (before the answer is delivered: the request stays open) and for the
 * answers an MRTR retry carries (before the handler receives one).
 *
 * With Ajv (the schema is the tool's, a JSON Schema): each distinct schema
 * is compiled once and kept (a bounded cache; tools ask with a handful).
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { InputRequest } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import { clipClientText } from '../core/clientText.js';
import { ErrorCode } from '../core/errors.js';
import { compileJsonSchema } from './ToolSchema.js';

/** Compiled `requestedSchema`s by their JSON text; emptied when full. */
const compiled = new Map<string, ValidateFunction | undefined>();
const MAX_COMPILED = 256;

/**
 * What is wrong with `answer` to `request`, as `content.<field>: <problem>`,
 * or `undefined` when it fits (or is not an accepted form elicitation, or
 * the request has no usable `requestedSchema`: nothing to check against).
 * The answer's own shape (`action`, `content` an object) is the result
 * schema's to judge, before this.
 */
export function elicitationAnswerProblem(request: InputRequest, answer: unknown): string | undefined {
  if (request.method !== 'elicitation/create') return undefined;
  const schema = request.params?.requestedSchema;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return undefined;
  if (answer === null || typeof answer !== 'object' || (answer as { action?: unknown }).action !== 'accept') return undefined;
  const validate = validatorOf(schema as JsonObject);
  // An accept without content is judged as an empty form: required fields are then missing.
  const content = (answer as { content?: unknown }).content ?? {};
  if (!validate || validate(content)) return undefined;
  return describe(validate.errors?.[0]);
}

/**
 * The -32602 error refusing `answer` under `key`, naming the key and the
 * field, or `undefined` when it fits. `method` names the request that
 * carried it (`tasks/update`), when there is one to name.
 */
export function refusedAnswer(
  key: string,
  request: InputRequest,
  answer: unknown,
  method?: string,
): { code: typeof ErrorCode.InvalidParams; message: string } | undefined {
  const problem = elicitationAnswerProblem(request, answer);
  if (problem === undefined) return undefined;
  return {
    code: ErrorCode.InvalidParams,
    message: `Invalid params${method ? ` for ${method}` : ''}: inputResponses.${clipClientText(key)}.${problem} (the answer does not match the requestedSchema of its elicitation/create)`,
  };
}

function validatorOf(schema: JsonObject): ValidateFunction | undefined {
  const key = JSON.stringify(schema);
  if (compiled.has(key)) return compiled.get(key);
  if (compiled.size >= MAX_COMPILED) compiled.clear();
  let validate: ValidateFunction | undefined;
  try {
    validate = compileJsonSchema(structuredClone(schema));
  } catch {
    // A schema Ajv cannot compile was the tool's mistake, not the client's: the answer is not refused for it.
    validate = undefined;
  }
  compiled.set(key, validate);
  return validate;
}

/** The first problem as `content.<field>: <message>`, naming the field even for a missing or extra one. */
function describe(error: ErrorObject | undefined): string {
  if (!error) return 'content: does not match the requestedSchema';
  const path = error.instancePath
    .slice(1)
    .split('/')
    .filter((part) => part !== '')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
  const params = error.params as { missingProperty?: unknown; additionalProperty?: unknown };
  if (error.keyword === 'required' && typeof params.missingProperty === 'string') path.push(params.missingProperty);
  if (error.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') path.push(params.additionalProperty);
  const field = clipClientText(['content', ...path].join('.'));
  return `${field}: ${error.message ?? 'is invalid'}`;
}
