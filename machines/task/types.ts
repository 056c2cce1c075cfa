/**
 * Types of the task machine: its context, its events and the JSON shapes it
 * carries. Everything here is plain JSON so a persisted snapshot survives a
 * JSON round trip unchanged (I-8).
 */
import type { JsonObject } from '../../src/core/json.js';

/** The five wire statuses of SEP-2663 (spec §1.2). */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** Statuses after which nothing changes any more (T-28, I-2). */
export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

/** One `inputRequests` entry: `{method, params}`, no `jsonrpc`, no `id` (spec §1.6, T-19). */
export interface InputRequest {
  method: 'elicitation/create' | 'sampling/createMessage' | 'roots/list';
  params?: JsonObject;
}

/** A JSON-RPC error object as carried by a failed task (T-15). */
export interface TaskError {
  code: number;
  message: string;
  data?: unknown;
}

/** What the runtime puts in a new task actor. */
export interface TaskInput {
  taskId: string;
  /** Principal that created the task (I-7). */
  owner: string;
  /** Name of the tool (or workflow) this task runs. */
  tool: string;
  /** Validated tool arguments, kept so a `resume: 'replay'` tool can run again. */
  args: JsonObject;
  /** Epoch ms. Timestamps stay numbers: a `Date` would not survive JSON. */
  now: number;
  ttlMs: number | null;
  pollIntervalMs?: number;
  statusMessage?: string;
  /**
   * Input requests already pending when the task is created (an `auto` call
   * promoted because it asked for input): the task starts `input_required`
   * with them (the seed status may be any status, spec §1.3).
   */
  inputRequests?: Record<string, InputRequest>;
  /** Client capabilities declared on the creating `tools/call` (D-10). */
  clientCapabilities?: JsonObject;
  /** Scopes and groups of the creating principal: the task's own calls (workflow steps) are judged with them, also after a restart. */
  grants?: { scopes?: string[]; groups?: string[] };
  /** W3C trace context of the creating `tools/call` (`_meta.traceparent`...): kept, handed to the tool, sent on. */
  trace?: { traceparent: string; tracestate?: string; baggage?: string };
}

export interface TaskContext {
  taskId: string;
  owner: string;
  tool: string;
  args: JsonObject;
  createdAt: number;
  lastUpdatedAt: number;
  ttlMs: number | null;
  pollIntervalMs?: number;
  /** `undefined` once cleared: recordResult drops a finished task's last message, and assign cannot delete a key. */
  statusMessage?: string | undefined;
  /** Set by the first CANCEL while the run runs: cooperative cancel (T-24). */
  cancelRequested: boolean;
  /** Outstanding input requests, by key (T-12, T-13). */
  inputRequests: Record<string, InputRequest>;
  /** Every key ever issued: a key is never reused (T-18, I-4). */
  issuedKeys: readonly string[];
  /** Responses already delivered to the run, by key (replayed on `resume: 'replay'`). */
  answers: Record<string, unknown>;
  result?: JsonObject;
  error?: TaskError;
  clientCapabilities?: JsonObject;
  grants?: { scopes?: string[]; groups?: string[] };
  trace?: { traceparent: string; tracestate?: string; baggage?: string };
  /**
   * Durable progress the run saved (`ctx.saveCheckpoint`): plain JSON,
   * persisted with the snapshot and handed back to a `resume: 'resume'` tool
   * after a restart.
   */
  checkpoint?: unknown;
  /**
   * Wake times (epoch ms) of every `ctx.sleep` key the run slept, by key:
   * a handler run again (restart, rehydration) sleeps a key until its stored
   * time, not for its whole duration again. Absent until the first sleep (and
   * in snapshots from before sleeps existed, which restore as they are).
   */
  sleeps?: Record<string, number>;
  /**
   * Earliest wake time of the sleeps the run waits for now, `undefined`
   * when it waits for none: a passivated task is woken (rehydrated) then.
   */
  sleepingUntil?: number | undefined;
}

/** Every event carries `at` (epoch ms) so `lastUpdatedAt` can be kept monotone. */
export type TaskEvent =
  | { type: 'STATUS'; at: number; message: string }
  | { type: 'INPUT_NEEDED'; at: number; key: string; request: InputRequest }
  | { type: 'INPUT_RESPONSES'; at: number; responses: Record<string, unknown> }
  | { type: 'WORK_DONE'; at: number; result: JsonObject }
  | { type: 'WORK_FAILED'; at: number; error: TaskError; message?: string }
  | { type: 'WORK_ABORTED'; at: number }
  /**
   * `idle`: nothing runs on the task's behalf (a passivated task: its handler
   * only slept), so there is nothing to cancel cooperatively
   * and a `working` task is cancelled at once, as one in `input_required` is (T-24).
   */
  | { type: 'CANCEL'; at: number; idle?: true }
  | { type: 'DEADLINE'; at: number }
  | {
      type: 'SERVER_RESTARTED';
      at: number;
      /** Why, when it was not a plain restart (an adopted task: another instance's lease ran out). */ message?: string;
    }
  /** The run saved durable progress (replaces the previous checkpoint). */
  | { type: 'CHECKPOINT'; at: number; checkpoint: unknown }
  /**
   * The run sleeps `key` (`ctx.sleep`) until `wakeAt` (kept the first time
   * only: a replayed sleep wakes at the stored time); `until` is the earliest
   * wake time of the sleeps it now waits for.
   */
  | { type: 'SLEEP'; at: number; key: string; wakeAt: number; until: number }
  /** A sleep ended: `until` is the earliest wake time of the sleeps still pending, `null` when none. */
  | { type: 'WOKE'; at: number; until: number | null };

/**
 * What the task machine asks of the task's run, as events it emits (xstate
 * `emit`; the runtime listens with `actor.on`): stop cooperatively, or take
 * these answers (T-22, T-24).
 */
export type RunMessage = { type: 'ABORT'; taskId: string } | { type: 'INPUT'; taskId: string; responses: Record<string, unknown> };
