/**
 * Per-task write chains of the lowdb store: the operations on one task run
 * one after another, so two puts never interleave and a version check made
 * inside the chain sees every earlier write.
 */
export class TaskChains {
  /** Tail of each task's chain; never rejects. Removed once idle. */
  readonly #chains = new Map<string, Promise<void>>();

  /** Runs `fn` after every earlier operation on any of these tasks has settled; later ones on them wait for it. */
  run<R>(taskIds: readonly string[], fn: () => Promise<R>): Promise<R> {
    const ids = taskIds.length === 1 ? taskIds : [...new Set(taskIds)];
    const earlier: Promise<void>[] = [];
    for (const taskId of ids) {
      const chain = this.#chains.get(taskId);
      if (chain !== undefined) earlier.push(chain);
    }
    const previous: Promise<unknown> = earlier.length === 0 ? Promise.resolve() : earlier.length === 1 ? earlier[0]! : Promise.all(earlier);
    const result = previous.then(fn);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    for (const taskId of ids) this.#chains.set(taskId, tail);
    void tail.then(() => {
      for (const taskId of ids) if (this.#chains.get(taskId) === tail) this.#chains.delete(taskId);
    });
    return result;
  }

  /** Resolves once no chain is running. */
  async idle(): Promise<void> {
    while (this.#chains.size > 0) await Promise.all(this.#chains.values());
  }
}
