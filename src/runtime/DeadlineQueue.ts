/**
 * Task ids by deadline, earliest first: a binary min-heap in two parallel
 * arrays (16 bytes a task, no object per entry). Passivation keeps one item
 * per passivated task with a ttl and one timer for the earliest:
 * ending the tasks whose deadline came costs O(log n) each, not a
 * scan of every passivated task each time the timer fires.
 *
 * Items are never removed from the middle: an item whose task has left (it
 * ended, was rehydrated, or left this process) stays until it comes up, and
 * its owner skips it then (`compact` drops such items in bulk when they
 * outnumber the real ones).
 */
export class DeadlineQueue {
  private ats: number[] = [];
  private keys: string[] = [];

  get size(): number {
    return this.ats.length;
  }

  /** The earliest deadline queued; `Infinity` when empty. */
  get earliest(): number {
    return this.ats.length === 0 ? Infinity : this.ats[0]!;
  }

  push(at: number, key: string): void {
    this.ats.push(at);
    this.keys.push(key);
    this.up(this.ats.length - 1);
  }

  /** Removes and returns every item due at `now` (deadline ≤ now), earliest first. */
  popDue(now: number): Array<{ at: number; key: string }> {
    const due: Array<{ at: number; key: string }> = [];
    while (this.ats.length > 0 && this.ats[0]! <= now) due.push(this.pop());
    return due;
  }

  /** Rebuilds the queue from the items still wanted (O(n)): stale items go. */
  compact(items: Iterable<{ at: number; key: string }>): void {
    this.ats = [];
    this.keys = [];
    for (const { at, key } of items) {
      this.ats.push(at);
      this.keys.push(key);
    }
    for (let i = (this.ats.length >> 1) - 1; i >= 0; i--) this.down(i);
  }

  private pop(): { at: number; key: string } {
    const top = { at: this.ats[0]!, key: this.keys[0]! };
    const lastAt = this.ats.pop()!;
    const lastKey = this.keys.pop()!;
    if (this.ats.length > 0) {
      this.ats[0] = lastAt;
      this.keys[0] = lastKey;
      this.down(0);
    }
    return top;
  }

  private up(index: number): void {
    const { ats, keys } = this;
    const at = ats[index]!;
    const key = keys[index]!;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (ats[parent]! <= at) break;
      ats[index] = ats[parent]!;
      keys[index] = keys[parent]!;
      index = parent;
    }
    ats[index] = at;
    keys[index] = key;
  }

  private down(index: number): void {
    const { ats, keys } = this;
    const length = ats.length;
    const at = ats[index]!;
    const key = keys[index]!;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      const child = right < length && ats[right]! < ats[left]! ? right : left;
      if (ats[child]! >= at) break;
      ats[index] = ats[child]!;
      keys[index] = keys[child]!;
      index = child;
    }
    ats[index] = at;
    keys[index] = key;
  }
}
