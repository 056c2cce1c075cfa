/**
 * muster's spellings, turned into taskvisor's before the file is validated
 * (docs/workflows.md, "Coming from muster"):
 *
 * - snake_case keys muster's API accepts: `allow_failure`, `from_step`,
 *   `expect_not`, `json_path` (giving both spellings is an error);
 * - a top-level `required: [arg…]` list, which marks those args required;
 * - `input_schema: { type: object, args | properties, required }`, the older
 *   form of `args` some muster files still carry (muster's YAML decoder
 *   ignores it; taskvisor reads it, so those arguments are validated);
 * - an empty `args: {}` on a forEach or parallel step (muster ignores it).
 *
 * Problems are returned as `{ path, message }` so the loader can point at
 * the line.
 */
export interface CompatProblem {
  path: PropertyKey[];
  message: string;
}

const SNAKE: Record<string, string> = {
  allow_failure: 'allowFailure',
  from_step: 'fromStep',
  expect_not: 'expectNot',
  json_path: 'jsonPath',
};

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

function renameKeys(node: Json, at: PropertyKey[], problems: CompatProblem[]): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    const camel = SNAKE[key];
    if (camel !== undefined && Object.hasOwn(node, camel)) {
      problems.push({ path: [...at, key], message: `both ${key} and ${camel} are given; use one` });
      continue;
    }
    out[camel ?? key] = value;
  }
  return out;
}

function step(raw: unknown, at: PropertyKey[], problems: CompatProblem[]): unknown {
  if (!isObject(raw)) return raw;
  const s = renameKeys(raw, at, problems);
  if (isObject(s.condition)) {
    const c = renameKeys(s.condition, [...at, 'condition'], problems);
    for (const key of ['expect', 'expectNot'] as const) {
      if (isObject(c[key])) c[key] = renameKeys(c[key], [...at, 'condition', key], problems);
    }
    s.condition = c;
  }
  if ((s.forEach !== undefined || s.parallel !== undefined) && isObject(s.args) && Object.keys(s.args).length === 0) delete s.args;
  if (isObject(s.forEach) && Array.isArray(s.forEach.steps)) {
    s.forEach = { ...s.forEach, steps: s.forEach.steps.map((sub, i) => step(sub, [...at, 'forEach', 'steps', i], problems)) };
  }
  if (Array.isArray(s.parallel)) s.parallel = s.parallel.map((sub, i) => step(sub, [...at, 'parallel', i], problems));
  return s;
}

/** The workflow body with muster's spellings normalised. */
export function normalizeMusterSpellings(body: Json, problems: CompatProblem[]): Json {
  const out: Json = { ...body };
  if (Array.isArray(out.steps)) out.steps = out.steps.map((s, i) => step(s, ['steps', i], problems));
  if (Array.isArray(out.onFailure)) out.onFailure = out.onFailure.map((s, i) => step(s, ['onFailure', i], problems));
  if (out.input_schema !== undefined) {
    const schema = out.input_schema;
    delete out.input_schema;
    if (out.args !== undefined) problems.push({ path: ['input_schema'], message: 'both input_schema and args are given; use args' });
    else if (!isObject(schema)) problems.push({ path: ['input_schema'], message: 'expected an object { type: object, args, required }' });
    else {
      const props = schema.args ?? schema.properties ?? {};
      if (!isObject(props)) problems.push({ path: ['input_schema', 'args'], message: 'expected an object of arguments' });
      else {
        out.args = { ...props };
        if (schema.required !== undefined) out.required = schema.required;
      }
    }
  }
  if (out.required !== undefined) {
    const required = out.required;
    delete out.required;
    if (!Array.isArray(required) || !required.every((r) => typeof r === 'string')) {
      problems.push({ path: ['required'], message: 'expected a list of argument names' });
    } else {
      const args: Json = isObject(out.args) ? { ...out.args } : {};
      for (const [i, name] of required.entries()) {
        if (!isObject(args[name])) problems.push({ path: ['required', i], message: `${JSON.stringify(name)} is not an argument` });
        else args[name] = { ...args[name], required: true };
      }
      out.args = args;
    }
  }
  return out;
}
