/**
 * A wrapped (forwarded) task followed for a listen stream. A Tasks-capable
 * upstream is subscribed to (`subscriptions/listen` with its task id, pushes
 * arrive at once); in any case the task is also polled at its own
 * `pollIntervalMs` (bounded 100 ms – 5 s), since pushing is optional for the
 * upstream (T-29, T-50). While the upstream is down nothing is reported
 * (never an invented status); polling goes on slowly and the subscription is
 * opened again once it is back.
 */
import type { JsonObject } from '../core/json.js';
import { isTerminalStatus } from '../core/statuses.js';
import { asNotification, stripMeta } from './forwardedShapes.js';
import type { UpstreamConnection } from './UpstreamConnection.js';

/** What following needs of the forwarder. */
export interface FollowSource {
  /** The wrapped task as a `notifications/tasks` frame carries it. */
  read(taskId: string, principal: string): Promise<JsonObject>;
  /** The open connection of `upstream`, or `undefined` while it is down. */
  connection(upstream: string, principal: string): UpstreamConnection | undefined;
}

/**
 * Follows `taskId` (wrapped; `ref` is what it unwrapped to for `principal`,
 * `undefined` when it does not) and reports each visible change to `onChange`
 * until the task ends or the returned function is called.
 */
export function followTask(
  source: FollowSource,
  taskId: string,
  principal: string,
  ref: { upstream: string; taskId: string } | undefined,
  current: JsonObject,
  onChange: (task: JsonObject) => void,
): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let last = visibleKey(current);
  let delay = followDelay(current);
  let unsubscribe: (() => void) | undefined;
  const report = (task: JsonObject) => {
    if (stopped) return;
    const key = visibleKey(task);
    if (key === last) return;
    last = key;
    onChange(task);
    if (isTerminalStatus(task.status)) stop();
  };
  const subscribe = () => {
    const connection = ref ? source.connection(ref.upstream, principal) : undefined;
    if (!ref || unsubscribe || !connection?.isOpen || !connection.tasks) return;
    unsubscribe = connection.listen(
      [ref.taskId],
      (frame) => {
        if (frame.taskId === ref.taskId) report({ ...asNotification(stripMeta(frame)), taskId });
      },
      () => {
        unsubscribe = undefined; // the stream ended (upstream gone or closed it): polling goes on, we re-subscribe on the next good poll
      },
    );
  };
  const tick = async () => {
    if (stopped) return;
    try {
      const task = await source.read(taskId, principal);
      delay = followDelay(task);
      report(task);
      subscribe();
    } catch {
      delay = Math.min(5_000, Math.max(1_000, delay * 2));
    }
    if (!stopped) timer = setTimeout(() => void tick(), delay);
  };
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
    unsubscribe?.();
    unsubscribe = undefined;
  };
  subscribe();
  timer = setTimeout(() => void tick(), delay);
  return stop;
}

/** What a listener sees change: status, message, input requests, result, error. */
function visibleKey(task: JsonObject): string {
  return JSON.stringify([task.status, task.statusMessage, task.inputRequests, task.result, task.error]);
}

function followDelay(task: JsonObject): number {
  const hint = typeof task.pollIntervalMs === 'number' ? task.pollIntervalMs : 1000;
  return Math.min(5_000, Math.max(100, hint));
}
