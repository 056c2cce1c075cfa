/**
 * The input requests of 2025-11-25 upstream tasks, held until a caller
 * answers them. In that era a task asks for input with an `elicitation/create`
 * request to its client, tagged with `_meta["io.modelcontextprotocol/related-task"]`
 * and delivered while the client has `tasks/result` open. taskvisor keeps each
 * such request pending here and shows it as the forwarded task's
 * `inputRequests` entry (2026-07-28 §1.6); the caller's `tasks/update` (or the
 * MRTR retry of a collapsed call) settles it, and that answer goes back to the
 * upstream as the response to its request.
 *
 * One board per upstream connection: keys are unique for the connection's
 * life, so a task never sees a key reused (T-18), and an answered key is
 * gone (T-22 ignores answers to it).
 */
import type { InputRequest } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';

/** A 2025-11-25 `elicitation/create` result (also the 2026-07-28 `inputResponses` value, §1.6). */
export type ElicitAnswer = JsonObject & { action: 'accept' | 'decline' | 'cancel' };

interface Pending {
  request: InputRequest;
  settle(answer: ElicitAnswer): void;
}

/** `_meta` key naming the task a 2025-11-25 server-to-client request belongs to. */
export const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task';

export class LegacyInputRequests {
  private readonly byTask = new Map<string, Map<string, Pending>>();
  private readonly waiters = new Map<string, Set<() => void>>();
  /** Tasks whose `tasks/result` is open (the upstream delivers their requests on it). */
  private readonly draining = new Set<string>();
  private counter = 0;

  /**
   * Keeps one `tasks/result` open for `taskId` (started by `open`) until it
   * answers: 2025-11-25 delivers a task's input requests only while its
   * client waits there.
   */
  drain(taskId: string, open: () => Promise<unknown>): void {
    if (this.draining.has(taskId)) return;
    this.draining.add(taskId);
    void open()
      .catch(() => undefined)
      .finally(() => this.draining.delete(taskId));
  }

  /**
   * Holds one `elicitation/create` of upstream task `taskId` (its params as
   * the upstream sent them) and resolves with the caller's answer.
   */
  hold(taskId: string, params: JsonObject): Promise<ElicitAnswer> {
    const { _meta: _related, elicitationId: _id, ...rest } = params;
    // 2026-07-28 has no elicitationId (§1.6); `mode` defaults to form in both eras.
    const request: InputRequest = { method: 'elicitation/create', params: rest };
    const key = `elicitation-${++this.counter}`;
    return new Promise<ElicitAnswer>((resolve) => {
      let pending = this.byTask.get(taskId);
      if (!pending) this.byTask.set(taskId, (pending = new Map()));
      pending.set(key, {
        request,
        settle: (answer) => {
          this.byTask.get(taskId)?.delete(key);
          if (this.byTask.get(taskId)?.size === 0) this.byTask.delete(taskId);
          resolve(answer);
        },
      });
      for (const wake of this.waiters.get(taskId) ?? []) wake();
    });
  }

  /** The task's outstanding requests by key (T-12: all of them, the same keys on every poll, T-13). */
  outstanding(taskId: string): Record<string, InputRequest> {
    const pending = this.byTask.get(taskId);
    return pending ? Object.fromEntries([...pending].map(([key, entry]) => [key, entry.request])) : {};
  }

  /** Resolves once the task has an outstanding request, or after `ms` (whichever is first). */
  async arrival(taskId: string, ms: number): Promise<void> {
    if (this.byTask.has(taskId)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.get(taskId)?.delete(done);
        if (this.waiters.get(taskId)?.size === 0) this.waiters.delete(taskId);
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      let set = this.waiters.get(taskId);
      if (!set) this.waiters.set(taskId, (set = new Set()));
      set.add(done);
    });
  }

  /**
   * Settles the outstanding requests `responses` answers; answers under any
   * other key are ignored (T-22). Returns the outstanding keys whose answer
   * is not an elicitation result (nothing is settled then).
   */
  answer(taskId: string, responses: Record<string, unknown>): { malformed: string[] } {
    const pending = this.byTask.get(taskId);
    if (!pending) return { malformed: [] };
    const answered = Object.entries(responses).filter(([key]) => pending.has(key));
    const malformed = answered.filter(([, value]) => !isElicitAnswer(value)).map(([key]) => key);
    if (malformed.length > 0) return { malformed };
    for (const [key, value] of answered) pending.get(key)?.settle(value as ElicitAnswer);
    return { malformed: [] };
  }

  /** The task ended or was cancelled: its requests are answered `cancel` (the upstream stops waiting). */
  cancel(taskId: string): void {
    for (const entry of [...(this.byTask.get(taskId)?.values() ?? [])]) entry.settle({ action: 'cancel' });
  }

  /** The connection closed: every request is answered `cancel`. */
  cancelAll(): void {
    for (const taskId of [...this.byTask.keys()]) this.cancel(taskId);
  }
}

function isElicitAnswer(value: unknown): value is ElicitAnswer {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const action = (value as { action?: unknown }).action;
  return action === 'accept' || action === 'decline' || action === 'cancel';
}
