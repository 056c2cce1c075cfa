/**
 * Reads and validates workflow files. Every error names the file, the line
 * and column, the path and the field, like config errors do:
 *
 *   deploy.yaml:12:9: steps[1].args.name: invalid expression {{ input. }}: …
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { ancestors, checkNeeds, isDag } from '../model/dag.js';
import { LineCounter, parseDocument, type Document } from 'yaml';
import { dotted, position } from '../../config/loadConfig.js';
import { argsSchema } from '../model/argsSchema.js';
import { WorkflowSchema, type WorkflowDefinition, type WorkflowStep, type WorkflowSubStep } from '../model/definition.js';
import { checkTemplates, chooseEngine } from '../templates/render.js';
import { normalizeMusterSpellings, type CompatProblem } from './musterCompat.js';
import { toolsCalledBy } from '../model/toolsCalledBy.js';

/** Workflow files larger than this are refused before parsing. */
export const MAX_WORKFLOW_BYTES = 512 * 1024;

/** A workflow file (or set of files) that cannot be used; `message` is ready to print, one problem a line. */
export class WorkflowError extends Error {
  constructor(
    message: string,
    /** The file at fault, when one is. */
    readonly file?: string,
  ) {
    super(message);
    this.name = 'WorkflowError';
  }
}

/** Whether a file name is a workflow file. */
export const isWorkflowFile = (name: string) => /\.ya?ml$/i.test(name) && !name.startsWith('.');

/** Parses and validates one workflow file's text; `file` names it in messages and gives the default name. */
/** How deep `forEach` loops may nest (a loop inside a loop inside …): enough for real fan-outs, bounded for the executor. */
export const MAX_LOOP_DEPTH = 4;

export function parseWorkflow(text: string, file: string): WorkflowDefinition {
  const relative = path.relative(process.cwd(), file);
  const label = path.basename(file) === file || !relative || relative.startsWith('..') ? file : relative;
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const first = doc.errors[0]!;
    const at = first.linePos?.[0] ?? (first.pos ? lineCounter.linePos(first.pos[0]) : undefined);
    throw new WorkflowError(`${label}${at ? `:${at.line}:${at.col}` : ''}: invalid YAML: ${first.message.split('\n')[0]}`, file);
  }
  const raw = (doc.toJS({ maxAliasCount: 100 }) ?? {}) as Record<string, unknown>;
  // muster's resource shape (kind: Workflow, metadata.name, spec: {...}) is read as the plain one.
  const muster = raw.kind === 'Workflow' && typeof raw.spec === 'object' && raw.spec !== null;
  const inFile = (at: readonly PropertyKey[]): PropertyKey[] =>
    !muster ? [...at] : at[0] === 'name' ? ['metadata', 'name', ...at.slice(1)] : ['spec', ...at];
  const where = (at: readonly PropertyKey[], wantKey = false) =>
    `${label}${position(doc, lineCounter, inFile(at), wantKey)}: ${dotted(inFile(at)) || '(top level)'}`;
  if (muster) {
    // A custom resource's `status:` block (written by muster's controller) is accepted and ignored, as muster does.
    const extra = Object.keys(raw).filter((key) => !['apiVersion', 'kind', 'metadata', 'spec', 'status'].includes(key));
    if (extra.length > 0)
      throw new WorkflowError(
        `${label}: ${extra.join(', ')}: unknown field next to kind: Workflow (allowed: apiVersion, kind, metadata, spec, status)`,
        file,
      );
  }
  const body = muster
    ? {
        ...(raw.spec as Record<string, unknown>),
        ...((raw.metadata as { name?: unknown } | undefined)?.name !== undefined ? { name: (raw.metadata as { name: unknown }).name } : {}),
      }
    : raw;
  const compatProblems: CompatProblem[] = [];
  const normalized = normalizeMusterSpellings(body, compatProblems);
  if (compatProblems.length > 0) throw new WorkflowError(compatProblems.map((p) => `${where(p.path)}: ${p.message}`).join('\n'), file);
  const parsed = WorkflowSchema.safeParse(normalized);
  if (!parsed.success) {
    const lines = parsed.error.issues.slice(0, 10).map((issue) =>
      issue.code === 'unrecognized_keys'
        ? issue.keys.map((key) => `${where([...issue.path, key], true)}: unknown field`).join('\n')
        : // A field left out is named as required, not as a value of the wrong type.
          `${where(issue.path)}: ${issue.code === 'invalid_type' && issue.message.endsWith('received undefined') ? 'required field missing' : issue.message}`,
    );
    throw new WorkflowError(lines.join('\n'), file);
  }
  const workflow = parsed.data;
  const name = workflow.name ?? path.basename(file).replace(/\.ya?ml$/i, '');
  const problems: string[] = [];
  if (!/^[A-Za-z0-9_.-]{1,100}$/.test(name))
    problems.push(`${where([])}: the file name ${JSON.stringify(name)} is not a workflow name; set name:`);
  try {
    argsSchema(workflow.args);
  } catch (error) {
    const field = /^args\.([^.:]+)\.?([^:]*):/.exec((error as Error).message);
    problems.push(
      `${field ? where(['args', field[1]!, ...(field[2] ? [field[2]] : [])]) : where(['args'])}: ${(error as Error).message.replace(/^[^:]*: /, '')}`,
    );
  }
  // Step ids: unique across steps and onFailure (results.<id> must be unambiguous), sub-step ids unique in their parent.
  const seen = new Map<string, string>();
  const claim = (id: string, at: PropertyKey[]) => {
    const before = seen.get(id);
    if (before) problems.push(`${where([...at, 'id'])}: duplicate step id ${JSON.stringify(id)} (also at ${before})`);
    else seen.set(id, dotted(at));
  };
  const engine =
    workflow.templates ?? chooseEngine({ steps: workflow.steps, onFailure: workflow.onFailure, output: workflow.output }, muster);
  const checkTemplatesAt = (value: unknown, at: PropertyKey[]) => {
    for (const problem of checkTemplates(value, '', engine)) {
      const sub = problem.field
        .split(/\.|\[(\d+)\]/)
        .filter((p) => p !== undefined && p !== '')
        .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
      problems.push(`${where([...at, ...sub])}: ${problem.message}`);
    }
  };
  const checkFlat = (step: WorkflowStep | WorkflowSubStep, at: PropertyKey[], earlier: ReadonlySet<string>) => {
    if (step.args) checkTemplatesAt(step.args, [...at, 'args']);
    if (step.input) {
      checkTemplatesAt(step.input.message, [...at, 'input', 'message']);
      if (step.input.requestedSchema.required) {
        const missing = step.input.requestedSchema.required.filter((key) => !Object.hasOwn(step.input!.requestedSchema.properties, key));
        if (missing.length)
          problems.push(`${where([...at, 'input', 'requestedSchema', 'required'])}: ${missing.join(', ')} not in properties`);
      }
    }
    if (step.condition) {
      const c = step.condition;
      for (const key of ['expect', 'expectNot'] as const) {
        if ('tool' in c || 'fromStep' in c) {
          const expect = c[key];
          if (expect?.jsonPath) checkTemplatesAt(expect.jsonPath, [...at, 'condition', key, 'jsonPath']);
        }
      }
      if ('template' in c) checkTemplatesAt(c.template, [...at, 'condition', 'template']);
      else if ('tool' in c) {
        if (c.args) checkTemplatesAt(c.args, [...at, 'condition', 'args']);
      } else if (!earlier.has(c.fromStep)) {
        problems.push(
          `${where([...at, 'condition', 'fromStep'])}: ${JSON.stringify(c.fromStep)} is not an earlier step (one this step needs, directly or through others)`,
        );
      }
    }
  };
  // needs: a DAG (unknown ids and cycles refused with the field); a step sees only the steps it transitively needs.
  const needsProblems = checkNeeds(workflow.steps, new Set((workflow.onFailure ?? []).map((step) => step.id)));
  for (const problem of needsProblems) problems.push(`${where(problem.path)}: ${problem.message}`);
  if (workflow.maxConcurrency !== undefined && !isDag(workflow.steps))
    problems.push(`${where(['maxConcurrency'])}: applies to steps with needs (a plain sequence runs one step at a time)`);
  const visible = needsProblems.length === 0 ? ancestors(workflow.steps) : new Map<string, Set<string>>();
  // A loop's sub-steps, and theirs in turn (loops nest): templates, ids unique in their parent, loop variables.
  const checkLoop = (step: WorkflowStep | WorkflowSubStep, at: PropertyKey[], seenBefore: ReadonlySet<string>, loopVars: string[]) => {
    const subs = step.forEach?.steps ?? step.parallel;
    if (!subs) return;
    if (loopVars.length + (step.parallel ? 0 : 1) > MAX_LOOP_DEPTH) {
      problems.push(`${where(at)}: loops nest at most ${MAX_LOOP_DEPTH} forEach deep`);
      return;
    }
    let vars = loopVars;
    if (step.forEach) {
      checkTemplatesAt(step.forEach.items, [...at, 'forEach', 'items']);
      const as = step.forEach.as ?? 'item';
      if (loopVars.includes(as))
        problems.push(
          `${where([...at, 'forEach', ...(step.forEach.as !== undefined ? ['as'] : [])])}: the loop variable ${JSON.stringify(as)} is already an enclosing forEach's; give this one another name (as:)`,
        );
      vars = [...loopVars, as];
    }
    const subIds = new Set<string>();
    const subAt: PropertyKey[] = step.forEach ? [...at, 'forEach', 'steps'] : [...at, 'parallel'];
    subs.forEach((sub, j) => {
      if (subIds.has(sub.id)) problems.push(`${where([...subAt, j, 'id'])}: duplicate sub-step id ${JSON.stringify(sub.id)} in ${step.id}`);
      subIds.add(sub.id);
      // In a forEach, earlier sub-steps of the same iteration count; parallel siblings do not see each other.
      const sees = step.forEach ? new Set([...seenBefore, ...[...subIds].slice(0, -1)]) : seenBefore;
      checkFlat(sub, [...subAt, j], sees);
      checkLoop(sub, [...subAt, j], sees, vars);
    });
  };
  const earlier = new Set<string>();
  workflow.steps.forEach((step, i) => {
    const at: PropertyKey[] = ['steps', i];
    claim(step.id, at);
    const sees = visible.get(step.id) ?? earlier;
    checkFlat(step, at, sees);
    checkLoop(step, at, sees, []);
    earlier.add(step.id);
  });
  (workflow.onFailure ?? []).forEach((step, i) => {
    claim(step.id, ['onFailure', i]);
    checkFlat(step, ['onFailure', i], earlier);
    checkLoop(step, ['onFailure', i], earlier, []);
  });
  if (workflow.output !== undefined) checkTemplatesAt(workflow.output, ['output']);
  if (problems.length > 0) throw new WorkflowError(problems.join('\n'), file);
  return { ...workflow, name, templates: engine, file: path.resolve(file) };
}

/** Reads and validates one workflow file. */
export async function loadWorkflowFile(file: string): Promise<WorkflowDefinition> {
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (error) {
    throw new WorkflowError(
      `${file}: cannot read the workflow file: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      file,
    );
  }
  if (size > MAX_WORKFLOW_BYTES)
    throw new WorkflowError(`${file}: the workflow file is ${size} bytes; the limit is ${MAX_WORKFLOW_BYTES}`, file);
  return parseWorkflow(await readFile(file, 'utf8'), file);
}

/** What reading a folder found: the valid definitions and, per bad file, its error. */
export interface WorkflowDirContents {
  definitions: WorkflowDefinition[];
  errors: WorkflowError[];
}

/** Reads every `*.yaml`/`*.yml` file of `dir` (not recursive). */
export async function loadWorkflowDir(dir: string): Promise<WorkflowDirContents> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter(isWorkflowFile).sort();
  } catch (error) {
    throw new WorkflowError(
      `${dir}: cannot read the workflows folder: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  const definitions: WorkflowDefinition[] = [];
  const errors: WorkflowError[] = [];
  for (const name of names) {
    try {
      definitions.push(await loadWorkflowFile(path.join(dir, name)));
    } catch (error) {
      errors.push(error instanceof WorkflowError ? error : new WorkflowError(`${name}: ${(error as Error).message}`, path.join(dir, name)));
    }
  }
  return { definitions, errors };
}

/**
 * Problems of a set of workflows served together: two files with one name,
 * and workflows that call themselves through other workflows (a cycle would
 * never end). `prefix` turns a name into its tool name.
 */
export function checkWorkflowSet(definitions: readonly WorkflowDefinition[], prefix: string): WorkflowError[] {
  const errors: WorkflowError[] = [];
  const byTool = new Map<string, WorkflowDefinition>();
  for (const definition of definitions) {
    const tool = prefix + definition.name;
    const other = byTool.get(tool);
    if (other)
      errors.push(
        new WorkflowError(
          `${definition.file}: workflow name ${JSON.stringify(definition.name)} is also used by ${other.file}`,
          definition.file,
        ),
      );
    else byTool.set(tool, definition);
  }
  // Depth-first search for a cycle in the "calls" graph among workflows.
  const state = new Map<string, 'visiting' | 'done'>();
  const reported = new Set<string>();
  const visit = (tool: string, trail: string[]): void => {
    if (state.get(tool) === 'done') return;
    if (state.get(tool) === 'visiting') {
      const cycle = [...trail.slice(trail.indexOf(tool)), tool];
      const key = [...cycle].sort().join(',');
      if (!reported.has(key)) {
        reported.add(key);
        const definition = byTool.get(tool)!;
        errors.push(new WorkflowError(`${definition.file}: workflows call each other in a cycle: ${cycle.join(' → ')}`, definition.file));
      }
      return;
    }
    state.set(tool, 'visiting');
    for (const callee of toolsCalledBy(byTool.get(tool)!)) if (byTool.has(callee)) visit(callee, [...trail, tool]);
    state.set(tool, 'done');
  };
  for (const tool of byTool.keys()) visit(tool, []);
  return errors;
}
