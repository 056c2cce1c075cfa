/**
 * Group commit, one queue for every store: the writes handed in during one
 * turn of the event loop (and while the previous batch is committing) are
 * committed together — one transaction, one multi-row statement or one
 * journal file — and each caller is answered only after the commit holding
 * its write (I-1, T-07). One fsync or round trip per batch instead of one per
 * caller.
 *
 * Bounded: a batch holds at most `maxBatch` writes (what one statement or
 * file carries, and what one failure takes down); the writes past it wait
 * for the next batch, first in first out, so none is overtaken by a later
 * one. At most `maxInFlight` batches commit at once (default 1: one after the
 * other, in order). More than one only for writes that do not depend on each
 * other (creates of distinct ids): batches committing together may finish in
 * any order. With batches in flight below the bound, a write starts its own
 * batch on the next turn instead of waiting for a commit under way: a lone
 * caller (c=1) waits for one commit, its own.
 *
 * `commit` answers each write on its own (a duplicate create fails alone);
 * when `commit` throws, every write of the batch fails with that error and
 * none of them is acknowledged.
 */

/** How one write of a batch ended. */
export type WriteOutcome<R> = { readonly ok: true; readonly value: R } | { readonly ok: false; readonly error: Error };

export const succeeded = <R>(value: R): WriteOutcome<R> => ({ ok: true, value });
export const failed = <R>(error: Error): WriteOutcome<R> => ({ ok: false, error });

/** Commits one batch; returns one outcome per write, in the batch's order. */
export type CommitBatch<W, R> = (batch: readonly W[]) => Promise<readonly WriteOutcome<R>[]> | readonly WriteOutcome<R>[];

interface Queued<W, R> {
  write: W;
  resolve: (value: R) => void;
  reject: (error: Error) => void;
}

/** Bounds of a {@link GroupCommit}. */
export interface GroupCommitOptions {
  /** Most writes in one batch. Default {@link DEFAULT_MAX_BATCH}. */
  readonly maxBatch?: number;
  /** Most batches committing at once. Default 1 (in order). */
  readonly maxInFlight?: number;
}

/** Writes per batch when not told: a multi-row statement of this many records stays a few MB at most. */
export const DEFAULT_MAX_BATCH = 1024;

export class GroupCommit<W, R = void> {
  #queue: Queued<W, R>[] = [];
  #scheduled = false;
  #inFlight = 0;
  #commits = 0;
  #idleWaiters: Array<() => void> = [];
  readonly #maxBatch: number;
  readonly #maxInFlight: number;

  /** `describeFailure`: the error each caller of a failed batch gets (names the store, never the caller's data). */
  constructor(
    private readonly commit: CommitBatch<W, R>,
    private readonly describeFailure: (error: unknown, count: number) => Error,
    options: GroupCommitOptions = {},
  ) {
    this.#maxBatch = positiveInteger(options.maxBatch ?? DEFAULT_MAX_BATCH, 'maxBatch');
    this.#maxInFlight = positiveInteger(options.maxInFlight ?? 1, 'maxInFlight');
  }

  /** Batches committed so far (one transaction or file each). */
  get commits(): number {
    return this.#commits;
  }

  /** Queues `write` for the next batch; settles once that batch committed (or failed). */
  add(write: W): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ write, resolve, reject });
      this.#schedule();
    });
  }

  /** Resolves once every write handed in so far has been committed or failed (`close()` waits for it). */
  idle(): Promise<void> {
    if (this.#inFlight === 0 && !this.#scheduled && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.#maxInFlight) return;
    this.#scheduled = true;
    // Everything handed in during this turn joins the batch.
    setImmediate(() => {
      this.#scheduled = false;
      while (this.#queue.length > 0 && this.#inFlight < this.#maxInFlight) {
        void this.#commitBatch(this.#queue.length <= this.#maxBatch ? this.#queue.splice(0) : this.#queue.splice(0, this.#maxBatch));
      }
      this.#wakeIfIdle();
    });
  }

  async #commitBatch(batch: Queued<W, R>[]): Promise<void> {
    this.#inFlight++;
    let outcomes: readonly WriteOutcome<R>[] | undefined;
    let failure: Error | undefined;
    try {
      outcomes = await this.commit(batch.map((queued) => queued.write));
      this.#commits++;
    } catch (error) {
      failure = this.describeFailure(error, batch.length);
    }
    this.#inFlight--;
    batch.forEach((queued, i) => {
      const outcome = outcomes?.[i];
      if (failure !== undefined) queued.reject(failure);
      else if (outcome === undefined) queued.reject(new Error('group commit: the batch gave no outcome for this write'));
      else if (outcome.ok) queued.resolve(outcome.value);
      else queued.reject(outcome.error);
    });
    if (this.#queue.length > 0) this.#schedule();
    else this.#wakeIfIdle();
  }

  #wakeIfIdle(): void {
    if (this.#inFlight === 0 && !this.#scheduled && this.#queue.length === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
  }
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`group commit: ${name} must be a positive integer, got ${value}`);
  return value;
}
