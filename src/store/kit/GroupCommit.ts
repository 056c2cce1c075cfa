/**
 * Group commit, one queue for every store: the writes handed in during one
 * turn of the event loop (and while the previous batch is committing) are
 * committed together — one transaction, one multi-row statement or one
 * journal file — and each caller is answered only after the commit holding
 * its write (I-1, T-07). One fsync or round trip per batch instead of one per
 * caller.
 *
 * One batch commits at a time. `commit` answers each write on its own (a
 * duplicate create fails alone); when `commit` throws, every write of the
 * batch fails with that error and none of them is acknowledged.
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

export class GroupCommit<W, R = void> {
  #queue: Queued<W, R>[] = [];
  #scheduled = false;
  #committing = false;
  #commits = 0;
  #idleWaiters: Array<() => void> = [];

  /** `describeFailure`: the error each caller of a failed batch gets (names the store, never the caller's data). */
  constructor(
    private readonly commit: CommitBatch<W, R>,
    private readonly describeFailure: (error: unknown, count: number) => Error,
  ) {}

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
    if (!this.#committing && !this.#scheduled && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #schedule(): void {
    if (this.#committing || this.#scheduled) return;
    this.#scheduled = true;
    // Everything handed in during this turn joins the batch.
    setImmediate(() => {
      this.#scheduled = false;
      void this.#commitNext();
    });
  }

  async #commitNext(): Promise<void> {
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length > 0) {
      this.#committing = true;
      let outcomes: readonly WriteOutcome<R>[] | undefined;
      let failure: Error | undefined;
      try {
        outcomes = await this.commit(batch.map((queued) => queued.write));
        this.#commits++;
      } catch (error) {
        failure = this.describeFailure(error, batch.length);
      }
      this.#committing = false;
      batch.forEach((queued, i) => {
        const outcome = outcomes?.[i];
        if (failure !== undefined) queued.reject(failure);
        else if (outcome === undefined) queued.reject(new Error('group commit: the batch gave no outcome for this write'));
        else if (outcome.ok) queued.resolve(outcome.value);
        else queued.reject(outcome.error);
      });
    }
    if (this.#queue.length > 0) this.#schedule();
    else for (const wake of this.#idleWaiters.splice(0)) wake();
  }
}
