/**
 * Relays what an upstream says about one forwarded call while it runs: its
 * progress (for our progress token) to the caller's `progressToken`, its log
 * messages to the caller. Once the call became a forwarded task, progress
 * keeps arriving with no request to carry it: it becomes the task's
 * `statusMessage` ({@link TaskProgressBoard}) until the task ends.
 */
import type { ToolCallRequest } from '../runtime/ToolCaller.js';
import { progressText } from '../tools/CallerRelay.js';
import { TaskProgressBoard } from './TaskProgressBoard.js';
import type { UpstreamConnection } from './UpstreamConnection.js';

/** One forwarded call's relay. */
export interface CallRelay {
  /** The progress token sent upstream with the call. */
  token: string;
  /** The call became the forwarded task `upstreamId`: its progress goes to the task's statusMessage from now on. */
  handOver(upstreamId: string): void;
  /** The call was answered: stop relaying to the caller. */
  end(): void;
}

/** Starts relaying for one call of `upstream` on `connection`, on behalf of `request`. */
export function relayCall(
  progress: TaskProgressBoard,
  upstream: string,
  connection: UpstreamConnection,
  request: ToolCallRequest,
): CallRelay {
  const token = connection.newProgressToken();
  let taskKey: string | undefined;
  const stopProgress = connection.onProgress(token, (update) => {
    if (taskKey !== undefined) progress.set(taskKey, progressText(update));
    else request.relay?.progress?.(update);
  });
  const stopLog = request.relay?.log ? connection.addLogSink(request.relay.log) : () => {};
  return {
    token,
    handOver: (upstreamId) => {
      taskKey = TaskProgressBoard.key(upstream, upstreamId);
      progress.track(taskKey, stopProgress);
    },
    end: () => {
      stopLog();
      if (taskKey === undefined) stopProgress();
    },
  };
}
