/**
 * The workflow file format (one `*.yaml` file = one workflow), close to
 * muster's so its users feel at home (docs/workflows.md). Every object is
 * strict: an unknown key is an error, not a silent no-op.
 */
import { z } from 'zod';

const STEP_ID = /^[A-Za-z0-9_-]{1,63}$/;
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
    z
      .strictObject({ fromStep: stepId, expect: ExpectSchema.optional(), expectNot: ExpectSchema.optional() })
      .refine((c) => c.expect !== undefined || c.expectNot !== undefined, 'a fromStep condition needs expect or expectNot'),
  ],
  { error: 'expected { template } or { fromStep, expect | expectNot }' },
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
  description: z.string().optional(),
  condition: ConditionSchema.optional(),
  allowFailure: z.boolean().optional(),
  /** Accepted for muster files; every result is kept in `results` anyway. */
  output: z.boolean().optional(),
  /** muster's deprecated alias of `output`; accepted and ignored likewise. */
  store: z.boolean().optional(),
};

/** A flat step: a tool call or an input request (what forEach, parallel and onFailure hold). */
export const SubStepSchema = z
  .strictObject({
    ...common,
    tool: z.string().min(1).optional(),
    args: z.record(z.string(), z.unknown()).optional(),
    input: InputStepSchema.optional(),
  })
  .refine((s) => (s.tool === undefined) !== (s.input === undefined), 'a step needs exactly one of tool or input')
  .refine((s) => s.args === undefined || s.tool !== undefined, 'args belong to a tool step');

export const StepSchema = z
  .strictObject({
    ...common,
    tool: z.string().min(1).optional(),
    args: z.record(z.string(), z.unknown()).optional(),
    input: InputStepSchema.optional(),
    forEach: z
      .strictObject({
        /** A template yielding an array. */
        items: z.union([z.string(), z.array(z.unknown())]),
        /** Loop variable name: `vars.<as>` and `vars.<as>_index`. Default `item`. */
        as: z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
          .optional(),
        steps: z.array(SubStepSchema).min(1),
      })
      .optional(),
    parallel: z.array(SubStepSchema).min(1).optional(),
  })
  .refine(
    (s) => [s.tool, s.input, s.forEach, s.parallel].filter((v) => v !== undefined).length === 1,
    'a step needs exactly one of tool, input, forEach or parallel',
  )
  .refine((s) => s.args === undefined || s.tool !== undefined, 'args belong to a tool step');

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
  args: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'argument names are identifiers'), ArgSchema).optional(),
  steps: z.array(StepSchema).min(1),
  onFailure: z.array(SubStepSchema).optional(),
  /** Templates rendered at the end; the result's `structuredContent`. */
  output: z.unknown().optional(),
});

export type WorkflowArg = z.infer<typeof ArgSchema>;
export type WorkflowCondition = z.infer<typeof ConditionSchema>;
export type WorkflowSubStep = z.infer<typeof SubStepSchema>;
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
