/**
 * Optional members without the `undefined` ones, for `exactOptionalPropertyTypes`: an optional member
 * may be absent but not `undefined`, so an object built from maybe-undefined values would need one
 * `...(x !== undefined ? { x } : {})` per member. `{ ...definedProps({ x, y }) }` says the same once.
 * One extra object per call: not for hot paths.
 */

/** Members that may be `undefined` become optional without it; the others stay as they are. */
export type DefinedProps<T> = { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & {
  [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined>;
};

/** `props` without its `undefined` members, in their order (what the conditional spreads it replaces give). */
export function definedProps<T extends object>(props: T): DefinedProps<T>;
// The implementation's wider signature: a mapped type over a generic `T` cannot be built member by member.
export function definedProps(props: Record<string, unknown>): Record<string, unknown> {
  const defined: Record<string, unknown> = {};
  for (const key in props) {
    if (props[key] !== undefined) defined[key] = props[key];
  }
  return defined;
}
