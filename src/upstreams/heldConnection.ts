/**
 * The connection a held call goes out on. A live call is held only while its
 * upstream is connected; a held call run again after a restart (`replay`)
 * may start before the upstream is connected, so it waits for it: until the
 * upstream is ready, gives up (`failed`, `stopped`), or the run is cancelled
 * (the task's cancel, its ttl, the server stopping).
 */
import { ErrorCode, ToolError } from '../core/errors.js';
import type { UpstreamConnection } from './UpstreamConnection.js';

/** What waiting needs of the upstream manager. */
export interface HeldConnectionSource {
  connection(name: string): UpstreamConnection | undefined;
  describeDown(name: string): { state: string };
  waitFor(name: string, predicate: (status: { state: string }) => boolean, timeoutMs: number): Promise<unknown>;
}

/** How long one wait lasts before the state is looked at again (a wait cannot be called off, so it is kept short). */
const WAIT_SLICE_MS = 5_000;

export async function heldConnection(source: HeldConnectionSource, name: string, signal: AbortSignal): Promise<UpstreamConnection> {
  for (;;) {
    if (signal.aborted) throw signal.reason;
    const connection = source.connection(name);
    if (connection?.isOpen) return connection;
    const { state } = source.describeDown(name);
    if (state === 'failed' || state === 'stopped') {
      throw new ToolError(ErrorCode.InternalError, `The upstream server ${name} is not available (${state})`);
    }
    // Looked at on every change of the upstream (and every 200 ms): open now, or given up.
    const settled = (status: { state: string }) =>
      source.connection(name)?.isOpen === true || status.state === 'failed' || status.state === 'stopped';
    let onAbort: (() => void) | undefined;
    await Promise.race([
      source.waitFor(name, settled, WAIT_SLICE_MS).catch(() => undefined),
      new Promise<void>((resolve) => {
        onAbort = () => resolve();
        signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}
