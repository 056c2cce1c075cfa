/**
 * muster's run history tools, under muster's names so its clients find them:
 * `core_workflow_execution_list` and `core_workflow_execution_get`. Both see
 * only the caller's own runs: another principal's run answers exactly like an
 * unknown id (I-7). The names are muster's `core_` ones, outside the
 * `workflow_` space, so no workflow can be shadowed by them or shadow them.
 */
import { z } from 'zod';
import type { ToolDefinition, ToolResult } from '../../tools/ToolDefinition.js';
import type { JsonObject } from '../../core/json.js';
import { RUN_STATUSES, type RunHistory, type RunStatus } from './RunHistory.js';
import { viewOf } from './runViews.js';

export const EXECUTION_LIST_TOOL = 'core_workflow_execution_list';
export const EXECUTION_GET_TOOL = 'core_workflow_execution_get';

const ListArgs = z.object({
  // An empty name filters nothing, as in muster.
  workflow_name: z.string().optional().describe('Only runs of this workflow (empty: every workflow)'),
  status: z
    .enum(RUN_STATUSES as [RunStatus, ...RunStatus[]], { error: `must be one of the enum values ${RUN_STATUSES.join(', ')}` })
    .optional()
    .describe('Only runs with this status'),
  // Bounds named as muster names them (minimum, maximum): its clients match on the words.
  limit: z
    .number()
    .int()
    .min(1, 'below the minimum of 1')
    .max(1000, 'above the maximum of 1000')
    .optional()
    .describe('At most this many runs (default 50)'),
  offset: z.number().int().min(0, 'below the minimum of 0').optional().describe('Skip this many runs (default 0)'),
});

const GetArgs = z.object({
  // muster's words for a missing, null or empty id, which its clients match on.
  execution_id: z
    .string({ error: 'execution_id is required' })
    .min(1, 'execution_id is required')
    .describe('The run (a synchronous run: the result\'s _meta "io.taskvisor/executionId"; a task run: its task id)'),
  include_steps: z.boolean().optional().describe('Include the step records (default true)'),
  step_id: z
    .string()
    .min(1, 'invalid step_id: it must not be empty')
    .optional()
    .describe('Only this step (forEach sub-steps as each[2].check); drops the run result'),
});

const answer = (value: object): ToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(value) }],
  structuredContent: value as JsonObject,
});

const refusal = (text: string): ToolResult => ({ content: [{ type: 'text', text }], isError: true });

/** The two history tools over `history`. */
export function historyTools(history: RunHistory): ToolDefinition[] {
  const list: ToolDefinition = {
    name: EXECUTION_LIST_TOOL,
    options: {
      title: 'Workflow runs',
      description: 'Your workflow runs, newest first (synchronous runs and tasks), with their status and step count.',
      inputSchema: ListArgs,
      taskBehavior: 'never',
      annotations: { readOnlyHint: true },
    },
    handler: async (args, ctx) => {
      const query = args as z.infer<typeof ListArgs>;
      return answer(
        await history.list({
          owner: ctx.principal,
          ...(query.workflow_name ? { workflow: query.workflow_name } : {}),
          ...(query.status !== undefined ? { status: query.status } : {}),
          ...(query.limit !== undefined ? { limit: query.limit } : {}),
          ...(query.offset !== undefined ? { offset: query.offset } : {}),
        }),
      );
    },
  };
  const get: ToolDefinition = {
    name: EXECUTION_GET_TOOL,
    options: {
      title: 'Workflow run',
      description: 'One of your workflow runs: status, input, result or error, and its step records.',
      inputSchema: GetArgs,
      taskBehavior: 'never',
      annotations: { readOnlyHint: true },
    },
    handler: async (args, ctx) => {
      const query = args as z.infer<typeof GetArgs>;
      // Unknown, expired and another principal's runs are one answer (I-7).
      const detail = await history.get(query.execution_id, ctx.principal);
      if (!detail) return refusal(`Workflow execution ${query.execution_id} not found`);
      const view = viewOf(detail, {
        ...(query.include_steps !== undefined ? { includeSteps: query.include_steps } : {}),
        ...(query.step_id !== undefined ? { stepId: query.step_id } : {}),
      });
      if (!view) return refusal(`Workflow execution ${query.execution_id}: step not found: ${query.step_id}`);
      return answer(view);
    },
  };
  return [list, get];
}
