/**
 * The workflow file format (one `*.yaml` file = one workflow), close to
 * muster's so its users feel at home (docs/workflows.md). Every object is
 * strict: an unknown key is an error, not a silent no-op.
 */
import { z } from 'zod';

import { parseDuration } from './duration.js';

const STEP_ID = /^[A-Za-z0-9_-]{1,63}$/;

/** `500ms`, `30s`, `5m`, `1h30m`, or milliseconds. */
const duration = z.union([z.string(), z.number()]).superRefine((value, ctx) => {
  const parsed = parseDuration(value);
  if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
});

/** Retrying a failed step: `attempts` in all, waiting `initialDelay` × `multiplier`^n (at most `maxDelay`) between. */
export const RetrySchema = z.strictObject({
  attempts: z.number().int().min(1).max(100),
  initialDelay: duration.optional(),
  maxDelay: duration.optional(),
  multiplier: z.number().min(1).max(10).optional(),
  /** Which failures are retried: a thrown error, an `isError` result, a step timeout. Default: error and timeout. */
  on: z
    .array(z.enum(['error', 'isError', 'timeout']))
    .min(1)
    .optional(),
});
const stepId = z.string().regex(STEP_ID, 'step ids are 1-63 characters of A-Z a-z 0-9 _ -');

/** One declared argument; it becomes a property of the tool's input schema. */
export const ArgSchema = z.strictObject({
  type: z.enum(['string', 'integer', 'number', 'boolean', 'object', 'array']),
  required: z.boolean().optional(),
  description: z.string().max(500).optional(),
  default: z.unknown().optional(),
  enum: z
    .array(z.union([z.string(), z.number(), z.boolean()]))
    .min(1)
    .optional(),
  /** Strings only: a JavaScript regular expression the value must match. */
  pattern: z.string().optional(),
  /** Numbers only. */
  minimum: z.number().optional(),
  maximum: z.number().optional(),
});

const ExpectSchema = z.strictObject({
  /** Whether the step must have completed (true) or failed (false). */
  success: z.boolean().optional(),
  /** Dotted paths (with `[i]`) into the step's result and the values they must hold (values may be templates). */
  jsonPath: z.record(z.string(), z.unknown()).optional(),
});

export const ConditionSchema = z.union(
  [
    z.strictObject({ template: z.string().min(1) }),
    /** muster's tool condition: call the tool; `expect`/`expectNot` test its success and result. */
    z
      .strictObject({
        tool: z.string().min(1),
        args: z.record(z.string(), z.unknown()).optional(),
        expect: ExpectSchema.optional(),
        expectNot: ExpectSchema.optional(),
      })
      .refine((c) => c.expect !== undefined || c.expectNot !== undefined, 'a tool condition needs expect or expectNot'),
    z
      .strictObject({ fromStep: stepId, expect: ExpectSchema.optional(), expectNot: ExpectSchema.optional() })
      .refine((c) => c.expect !== undefined || c.expectNot !== undefined, 'a fromStep condition needs expect or expectNot'),
  ],
  {
    error: (issue) => {
      const condition = issue.input;
      const mixed =
        condition !== null && typeof condition === 'object' && 'template' in condition && ('tool' in condition || 'fromStep' in condition);
      // muster's words for the commonest mistake, which its clients match on.
      return mixed
        ? 'template is mutually exclusive with tool/fromStep: expected { template }, { fromStep, expect | expectNot } or { tool, args?, expect | expectNot }'
        : 'expected { template }, { fromStep, expect | expectNot } or { tool, args?, expect | expectNot }';
    },
  },
);

export const InputStepSchema = z.strictObject({
  message: z.string().min(1),
  requestedSchema: z.strictObject({
    type: z.literal('object'),
    properties: z.record(z.string(), z.record(z.string(), z.unknown())),
    required: z.array(z.string()).optional(),
  }),
  /** Input request key (unique in the run); default: the step id. */
  key: z.string().min(1).optional(),
});

const common = {
  id: stepId,
  /** Time one attempt of this step may take; it then fails ("timed out after …"). */
  timeout: duration.optional(),
  retry: RetrySchema.optional(),
  description: z.string().optional(),
  condition: ConditionSchema.optional(),
  allowFailure: z.boolean().optional(),
  /** Accepted for muster files; every result is kept in `results` anyway. */
  output: z.boolean().optional(),
  /** muster's deprecated alias of `output`; accepted and ignored likewise. */
  store: z.boolean().optional(),
};

/** A `forEach`: `steps` run once per item of `items` (a template yielding an array, or a literal array). */
const forEachOf = (steps: z.ZodType<WorkflowSubStep>) =>
  z.strictObject({
    /** A template yielding an array. */
    items: z.union([z.string(), z.array(z.unknown())], {
      error: (issue) => (issue.input === undefined ? 'items is required' : 'expected a template or an array'),
    }),
    /** Loop variable name: `vars.<as>` and `vars.<as>_index`. Default `item`. */
    as: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .optional(),
    steps: z.array(steps).min(1, 'a forEach needs at least one sub-step'),
    /** How many items run at once (default 1: one after the other, as in muster). */
    maxConcurrency: z.number().int().min(1).max(100).optional(),
  });

/** The fields of every step, main or sub-step. */
const stepShape = (sub: z.ZodType<WorkflowSubStep>) => ({
  ...common,
  tool: z.string().min(1).optional(),
  args: z.record(z.string(), z.unknown()).optional(),
  input: InputStepSchema.optional(),
  forEach: forEachOf(sub).optional(),
  parallel: z.array(sub).min(1).optional(),
  /** For `parallel`: how many sub-steps run at once (default: all). */
  maxConcurrency: z.number().int().min(1).max(100).optional(),
});

/** The rules every step obeys, main or sub-step. */
const stepRules = <T extends z.ZodType<WorkflowSubStep>>(schema: T) =>
  schema
    // Two messages, not one: muster's clients match on "mutually exclusive" and "is required".
    .refine(
      (s) => [s.tool, s.input, s.forEach, s.parallel].filter((v) => v !== undefined).length <= 1,
      'tool, input, forEach and parallel are mutually exclusive: a step needs exactly one of them',
    )
    .refine(
      (s) => [s.tool, s.input, s.forEach, s.parallel].some((v) => v !== undefined),
      'one of tool, forEach, or parallel is required (or input); a plain call: tool is required',
    )
    .refine((s) => s.args === undefined || s.tool !== undefined, 'args belong to a tool step')
    .refine((s) => s.maxConcurrency === undefined || s.parallel !== undefined, 'maxConcurrency (on the step) belongs to a parallel step')
    .refine((s) => s.retry === undefined || s.input === undefined, 'retry does not apply to an input step (nobody should be asked twice)');

/** A step as `forEach`, `parallel` and `onFailure` hold it. */
export interface WorkflowSubStep {
  id: string;
  timeout?: string | number | undefined;
  retry?: z.infer<typeof RetrySchema> | undefined;
  description?: string | undefined;
  condition?: z.infer<typeof ConditionSchema> | undefined;
  allowFailure?: boolean | undefined;
  output?: boolean | undefined;
  store?: boolean | undefined;
  tool?: string | undefined;
  args?: Record<string, unknown> | undefined;
  input?: z.infer<typeof InputStepSchema> | undefined;
  /** Loops nest, as in muster: a sub-step may be a `forEach` or `parallel` step itself. */
  forEach?:
    { items: string | unknown[]; as?: string | undefined; steps: WorkflowSubStep[]; maxConcurrency?: number | undefined } | undefined;
  parallel?: WorkflowSubStep[] | undefined;
  maxConcurrency?: number | undefined;
}

/** A sub-step: a tool call, an input request, or a loop of its own (`forEach`, `parallel`). */
export const SubStepSchema: z.ZodType<WorkflowSubStep> = z.lazy(() => stepRules(z.strictObject(stepShape(SubStepSchema))));

/** A main step: a sub-step that may also say which steps it `needs`. */
export const StepSchema = stepRules(
  z.strictObject({
    ...stepShape(SubStepSchema),
    /**
     * The steps this one waits for (a DAG, docs/workflows.md "Dependencies"):
     * it starts once each of them has ended (completed, skipped, or failed
     * with allowFailure). Without it a step follows the step before it;
     * `needs: []` starts at once.
     */
    needs: z.array(stepId).optional(),
  }),
);

export const WorkflowSchema = z.strictObject({
  /** Default: the file name without `.yaml`. */
  name: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,100}$/, 'names are 1-100 characters of A-Z a-z 0-9 _ - .')
    .optional(),
  title: z.string().optional(),
  description: z.string().max(1000).optional(),
  /** Template language: `go` (muster's Go text/template + sprig) or `jsonata`; default: detected (docs/workflows.md). */
  templates: z.enum(['go', 'jsonata']).optional(),
  taskBehavior: z.enum(['auto', 'always', 'never']).optional(),
  ttlMs: z.number().int().min(0).nullable().optional(),
  pollIntervalMs: z.number().int().min(0).optional(),
  /** Time the whole run may take, counted from its start (across restarts); the step in flight then fails. */
  timeout: duration.optional(),
  /** With `needs`: how many main steps run at once (default: every step whose needs have ended). */
  maxConcurrency: z.number().int().min(1).max(1000).optional(),
  args: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'argument names are identifiers'), ArgSchema).optional(),
  // muster's words, which its clients match on.
  steps: z.array(StepSchema).min(1, 'workflow must have at least one step'),
  onFailure: z.array(SubStepSchema).optional(),
  /** Templates rendered at the end; the result's `structuredContent`. */
  output: z.unknown().optional(),
});

export type WorkflowArg = z.infer<typeof ArgSchema>;
export type WorkflowCondition = z.infer<typeof ConditionSchema>;
export type WorkflowStep = z.infer<typeof StepSchema>;
export type WorkflowFile = z.infer<typeof WorkflowSchema>;

/** A validated workflow, as loaded from its file. */
export interface WorkflowDefinition extends WorkflowFile {
  name: string;
  /** The template language, resolved at load time (built-in definitions may leave it out: JSONata). */
  templates?: 'go' | 'jsonata';
  /** Absolute path of the file it came from ('' when built in code). */
  file: string;
}
