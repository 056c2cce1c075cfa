/**
 * Time limits of a run: the workflow `timeout`, a step's `timeout`, and the
 * waits between attempts. A limit aborts a signal with a {@link TimeLimit}
 * reason, so a timeout can be told from a cancel.
 */
import { parseDuration } from '../model/duration.js';

/** A step's or the run's time limit ran out. */
export class TimeLimit extends Error {
  override name = 'TimeoutError';
}

/** A signal that fires with the parent, or after `ms` with a {@link TimeLimit} reason. */
export function limited(parent: AbortSignal, ms: number, message: string): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent.reason);
  if (parent.aborted) controller.abort(parent.reason);
  else parent.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => controller.abort(new TimeLimit(message)), Math.max(0, ms));
  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      parent.removeEventListener('abort', onAbort);
    },
  };
}

/**
 * `promise`, or a rejection with the signal's reason as soon as it fires (a
 * callee that ignores its signal cannot hold the step). Either way `promise`
 * gets a handler: once the race is lost nobody else awaits it, and a callee
 * that saw the same signal rejects it (`throwIfAborted`, an aborted run's
 * `elicit` or `sleep`); left unhandled, that rejection would end the process.
 */
export function raced<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** A timer in this process that a cancel interrupts. */
export const sleep = (ms: number, signal: AbortSignal) => raced(new Promise<void>((resolve) => setTimeout(resolve, ms).unref?.()), signal);

/** A duration field in ms (`"30s"` or a number), or `fallback` when it is absent or unreadable. */
export const ms = (value: string | number | undefined, fallback: number): number => {
  if (value === undefined) return fallback;
  const parsed = parseDuration(value);
  return typeof parsed === 'number' ? parsed : fallback;
};
