/**
 * The unwinding of a synchronous call whose handler asked for input nobody
 * has given yet (MRTR, T-08): thrown inside the handler at `ctx.elicit`, and
 * turned into an `input_required` answer when the run ends.
 */
import type { InputRequest } from '../../machines/task/index.js';

export class InputRequiredSignal extends Error {
  constructor(
    readonly key: string,
    readonly request: InputRequest,
  ) {
    super(`input ${key} required`);
  }
}

/**
 * Whether `error` is the unwinding of a synchronous call that needs input
 * (MRTR): code that catches errors around `ctx.elicit` (a workflow step) must
 * rethrow it.
 */
export function isInputRequiredSignal(error: unknown): boolean {
  return error instanceof InputRequiredSignal;
}
