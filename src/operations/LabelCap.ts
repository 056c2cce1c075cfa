/**
 * Bounded label values (bounded cardinality): the first `max`
 * distinct values of a label are kept, every later one is reported as
 * `other`, so a flood of tool names (an upstream listing thousands) cannot
 * grow the metrics without end.
 */
export const OTHER_LABEL = 'other';

export class LabelCap {
  readonly #seen = new Set<string>();
  constructor(private readonly max = 500) {}

  /** `value`, or `other` once `max` other values were seen. */
  of(value: string): string {
    if (this.#seen.has(value)) return value;
    if (this.#seen.size >= this.max) return OTHER_LABEL;
    this.#seen.add(value);
    return value;
  }
}
