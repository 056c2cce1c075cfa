/**
 * The I/O behind the upstream machine's invoked actors: `connect`,
 * `monitor` and `backoffTimer`. The machine (machines/upstream) stays pure;
 * {@link UpstreamManager} provides these.
 */
import { fromCallback, fromPromise } from 'xstate';
import {
  backoffDelay,
  errorText,
  type BackoffTimerInput,
  type ConnectOutput,
  type MonitorInput,
  type UpstreamEvent,
} from '../../machines/upstream/index.js';

/** What the actors need from their owner. */
export interface UpstreamActorHost {
  /** Opens a fresh connection for `name`, registers its catalog, returns what the machine records. */
  connect(name: string, signal: AbortSignal): Promise<ConnectOutput>;
  /** Pings once. */
  ping(name: string): Promise<void>;
  /** Ping period (0 = none). */
  pingIntervalMs(name: string): number;
  /** Re-reads the catalog; resolves the new tool count. */
  refreshCatalog(name: string): Promise<number>;
  /** Subscribes to the connection's close and `list_changed`; returns the unsubscribe function (or `undefined` when already closed). */
  watch(name: string, on: { closed(reason: string): void; toolsChanged(): void }): (() => void) | undefined;
  /** The connection went out of service: drop its tools, close it. */
  offline(name: string): void;
  now(): number;
  random(): number;
}

export function upstreamActors(host: UpstreamActorHost) {
  return {
    connect: fromPromise<ConnectOutput, MonitorInput>(({ input, signal }) => host.connect(input.name, signal)),

    monitor: fromCallback<UpstreamEvent, MonitorInput>(({ input, sendBack }) => {
      let stopped = false;
      let refreshing = false;
      const unwatch = host.watch(input.name, {
        closed: (reason) => {
          if (!stopped) sendBack({ type: 'DISCONNECTED', error: reason });
        },
        toolsChanged: () => {
          if (refreshing) return;
          refreshing = true;
          host.refreshCatalog(input.name).then(
            (toolCount) => {
              refreshing = false;
              if (!stopped) sendBack({ type: 'CATALOG', toolCount });
            },
            (error) => {
              refreshing = false;
              if (!stopped) sendBack({ type: 'PING_FAILED', error: `tools/list failed: ${errorText(error)}` });
            },
          );
        },
      });
      if (!unwatch) {
        queueMicrotask(() => sendBack({ type: 'DISCONNECTED', error: 'the connection closed' }));
        return () => host.offline(input.name);
      }
      const period = host.pingIntervalMs(input.name);
      let pinging = false;
      const timer =
        period > 0
          ? setInterval(() => {
              if (pinging) return;
              pinging = true;
              host.ping(input.name).then(
                () => {
                  pinging = false;
                  if (!stopped) sendBack({ type: 'PING_OK' });
                },
                (error) => {
                  pinging = false;
                  if (!stopped) sendBack({ type: 'PING_FAILED', error: `ping failed: ${errorText(error)}` });
                },
              );
            }, period)
          : undefined;
      timer?.unref();
      return () => {
        stopped = true;
        clearInterval(timer);
        unwatch();
        host.offline(input.name);
      };
    }),

    backoffTimer: fromCallback<UpstreamEvent, BackoffTimerInput>(({ input, sendBack }) => {
      const delay = backoffDelay(Math.max(1, input.attempt), input.backoff, host.random());
      sendBack({ type: 'RETRY_SCHEDULED', at: host.now() + delay });
      const timer = setTimeout(() => sendBack({ type: 'RETRY' }), delay);
      return () => clearTimeout(timer);
    }),
  };
}
