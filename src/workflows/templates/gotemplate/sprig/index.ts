/**
 * The sprig (Masterminds/sprig v3) functions muster's templates can call,
 * with sprig's semantics: its math goes through int64 (`add 1.5 1` is 2),
 * `default` tests sprig's `empty`, `get` on a missing key gives "", `join`
 * skips nils, `toJson` sorts keys and escapes HTML as encoding/json does.
 *
 * Deliberately absent (a call is refused when the file loads, "function … not
 * defined"): `env`/`expandenv` (a workflow must not read the server's
 * environment), date functions (`now`, `date`, …: a replayed step would see a
 * different clock), random and crypto-key functions (`randAlpha`, `uuidv4`,
 * `shuffle`, `genPrivateKey`, …: not replay-safe), `semver*`, `url*`, and
 * the deprecated aliases.
 */
import type { GoFunction } from '../exec.js';
import { COLLECTIONS } from './collections.js';
import { ENCODINGS } from './encodings.js';
import { NUMBERS } from './numbers.js';
import { STRINGS } from './strings.js';

const table = { ...STRINGS, ...ENCODINGS, ...NUMBERS, ...COLLECTIONS };

export const SPRIG: Record<string, GoFunction> = Object.fromEntries(
  Object.entries(table).map(([name, [params, variadic, fn]]) => [name, { params, ...(variadic ? { variadic } : {}), fn }]),
);
