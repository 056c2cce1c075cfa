/**
 * The open `subscriptions/listen` streams: opening one (the acknowledgement
 * of the honoured filter, then each task's current state), the limits on
 * them, and the relay of remote tasks. Each stream subscribes to the
 * runtime's {@link ChangeBus}, which fans durable task changes, list changes
 * and resource updates out to the streams watching them; the streams turn
 * them into listen frames.
 */
import { TERMINAL_STATUSES, type TaskStatus } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import { DEFAULT_LIMITS, limitExceededError, type Limits } from '../limits/Limits.js';
import { ChangeBus, LIST_KINDS, type ListKind } from '../runtime/ChangeBus.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { ListenSubscription, type ListenFilter, type ListenSink, type RequestId } from './ListenSubscription.js';

/**
 * Tasks that live on another server (the aggregator's forwarded upstream
 * tasks): read and followed as wire `DetailedTask`s (no `resultType`),
 * never as local records.
 */
export interface RemoteTaskSource {
  /** Whether `taskId` is one of these (by shape). */
  owns(taskId: string): boolean;
  /** The task as `principal` may see it; throws for unknown or foreign ids. */
  read(taskId: string, principal: string): Promise<JsonObject>;
  /** Reports each later visible change until the returned stop function is called or the task is terminal. */
  follow(taskId: string, principal: string, current: JsonObject, onChange: (task: JsonObject) => void): () => void;
}

/** How the hub reads a task for a principal; throws for unknown or foreign ids. */
export type TaskReader = (taskId: string, principal: string) => Promise<TaskRecord>;

export interface SubscriptionHubOptions {
  readTask: TaskReader;
  /** The bus the streams subscribe to. Default: a bus of its own, fed by this hub's `publish*` methods. */
  bus?: ChangeBus;
  serverInfo: { name: string; version: string };
  /** Backlog above which a stream is cut off as too slow. Default 1000 messages. */
  maxBacklog?: number;
  /** Most task ids one listen may name; the rest are left out of the acknowledgement. Default 1000. */
  maxTaskIdsPerListen?: number;
  /** Open streams one principal may hold over all connections. Default 32. */
  maxStreamsPerPrincipal?: number;
  /** Longest resource URI a listen may name, bytes (checked by `parseListenRequest`). */
  maxListenUriBytes?: number;
  /** Bytes of the resource URIs of one listen (checked by `parseListenRequest`). */
  maxListenUriBytesPerListen?: number;
  /** Bytes of the resource URIs one principal's open streams watch together. */
  maxListenUriBytesPerPrincipal?: number;
}

export interface OpenListen {
  id: RequestId;
  principal: string;
  /** What the client asked for (already validated). */
  requested: ListenFilter;
  sink: ListenSink;
}

export class SubscriptionHub {
  /** Where the changes the streams watch come from. */
  readonly bus: ChangeBus;
  private readonly open = new Set<ListenSubscription>();
  private readonly maxBacklog: number;
  private readonly maxTaskIds: number;
  private readonly maxStreamsPerPrincipal: number;
  private readonly openByPrincipal = new Map<string, number>();
  /** Bytes of the resource URIs each principal's open streams watch (I-10: bounded per principal). */
  private readonly uriBytesByPrincipal = new Map<string, number>();
  /** The bounds on resource URIs: per URI and per listen (checked by `parseListenRequest`), per principal (here). */
  readonly uriLimits: Pick<Limits, 'maxListenUriBytes' | 'maxListenUriBytesPerListen' | 'maxListenUriBytesPerPrincipal'>;
  private remote: RemoteTaskSource | undefined;
  /** Stop functions of the remote tasks each stream follows. */
  private readonly follows = new Map<ListenSubscription, Map<string, () => void>>();

  constructor(private readonly options: SubscriptionHubOptions) {
    this.bus = options.bus ?? new ChangeBus();
    this.maxBacklog = options.maxBacklog ?? 1000;
    this.maxTaskIds = options.maxTaskIdsPerListen ?? DEFAULT_LIMITS.maxTaskIdsPerListen;
    this.maxStreamsPerPrincipal = options.maxStreamsPerPrincipal ?? DEFAULT_LIMITS.maxListenStreamsPerPrincipal;
    this.uriLimits = {
      maxListenUriBytes: options.maxListenUriBytes ?? DEFAULT_LIMITS.maxListenUriBytes,
      maxListenUriBytesPerListen: options.maxListenUriBytesPerListen ?? DEFAULT_LIMITS.maxListenUriBytesPerListen,
      maxListenUriBytesPerPrincipal: options.maxListenUriBytesPerPrincipal ?? DEFAULT_LIMITS.maxListenUriBytesPerPrincipal,
    };
  }

  /** Most task ids one listen request may name (callers refuse longer lists before opening). */
  get maxTaskIdsPerListen(): number {
    return this.maxTaskIds;
  }

  /**
   * The JSON-RPC error refusing one more stream for `principal` (asking for
   * `requested`), or undefined when it may open one. Callers check this right
   * before `openListen` (which registers synchronously, so nothing can slip
   * in between).
   */
  refusal(
    principal: string,
    requested: ListenFilter = {},
  ): { code: number; message: string; data: { limit: string; max: number } } | undefined {
    if ((this.openByPrincipal.get(principal) ?? 0) >= this.maxStreamsPerPrincipal) {
      return limitExceededError(
        'maxListenStreamsPerPrincipal',
        this.maxStreamsPerPrincipal,
        'too many open subscriptions/listen streams for this principal; close one first',
      );
    }
    const held = this.uriBytesByPrincipal.get(principal) ?? 0;
    const max = this.uriLimits.maxListenUriBytesPerPrincipal;
    if (held + uriBytes(this.uriList(requested)) > max) {
      return limitExceededError(
        'maxListenUriBytesPerPrincipal',
        max,
        `this principal's open subscriptions/listen streams already watch ${held} bytes of resource URIs; close one first`,
      );
    }
    return undefined;
  }

  /** Serves listens naming tasks of `source` (the aggregator's wrapped upstream task ids). */
  useRemoteTasks(source: RemoteTaskSource): void {
    this.remote = source;
  }

  /** Open streams. */
  get size(): number {
    return this.open.size;
  }

  /** Task ids with at least one watcher (for leak checks). */
  get watchedTasks(): number {
    return this.bus.watchedTasks;
  }

  /**
   * Opens a stream: registers it first (so no change is missed), then
   * acknowledges the honoured subset — only the caller's own tasks; unknown
   * and foreign ids are left out silently (T-10, D-11) — then sends each
   * accepted task's current state.
   */
  async openListen(request: OpenListen): Promise<ListenSubscription> {
    const subscription = new ListenSubscription({
      id: request.id,
      principal: request.principal,
      sink: request.sink,
      maxBacklog: this.maxBacklog,
      serverInfo: this.options.serverInfo,
      onClosed: (closed) => this.forget(closed),
    });
    this.open.add(subscription);
    this.openByPrincipal.set(request.principal, (this.openByPrincipal.get(request.principal) ?? 0) + 1);
    for (const kind of LIST_KINDS) if (request.requested[`${kind}ListChanged`]) this.bus.watchList(subscription, kind);
    const uris = this.uriList(request.requested);
    if (uris.length > 0)
      this.uriBytesByPrincipal.set(request.principal, (this.uriBytesByPrincipal.get(request.principal) ?? 0) + uriBytes(uris));
    for (const uri of uris) {
      this.bus.watchResource(subscription, uri);
    }
    const wanted = [...new Set(request.requested.taskIds ?? [])].slice(0, this.maxTaskIds);
    const remote = this.remote;
    const remoteWanted = remote ? wanted.filter((taskId) => remote.owns(taskId)) : [];
    const localWanted = remoteWanted.length > 0 ? wanted.filter((taskId) => !remoteWanted.includes(taskId)) : wanted;
    for (const taskId of localWanted) this.bus.watchTask(subscription, taskId);
    const current: TaskRecord[] = [];
    const remoteCurrent: Array<[string, JsonObject]> = [];
    const accepted: string[] = [];
    await Promise.all(
      remoteWanted.map(async (taskId) => {
        try {
          remoteCurrent.push([taskId, await remote!.read(taskId, request.principal)]);
          accepted.push(taskId);
          subscription.taskIds.add(taskId);
        } catch {
          // Unknown, foreign or unreachable: left out of the acknowledgement like a local unknown id (T-10, D-11).
        }
      }),
    );
    await Promise.all(
      localWanted.map(async (taskId) => {
        try {
          current.push(await this.options.readTask(taskId, request.principal));
          accepted.push(taskId);
        } catch {
          this.bus.unwatchTask(subscription, taskId);
        }
      }),
    );
    const changedMeanwhile = subscription.endOpening();
    if (subscription.closed) return subscription;
    const honoured: ListenFilter = {};
    for (const kind of subscription.lists) honoured[`${kind}ListChanged`] = true;
    if (request.requested.resourceSubscriptions !== undefined) honoured.resourceSubscriptions = [...subscription.resourceUris];
    if (request.requested.taskIds !== undefined) honoured.taskIds = wanted.filter((id) => accepted.includes(id));
    subscription.acknowledge(honoured);
    // The state right after the acknowledgement, so a client never waits for a change that already happened;
    // unless a change was published during the read: that frame is newer and went out first.
    for (const record of current) if (!changedMeanwhile.has(record.taskId)) this.bus.deliverTask(subscription, { kind: 'task', record });
    for (const [taskId, task] of remoteCurrent) {
      this.deliverRemote(subscription, taskId, task);
      if (!subscription.taskIds.has(taskId) || subscription.closed) continue;
      let follows = this.follows.get(subscription);
      if (!follows) this.follows.set(subscription, (follows = new Map()));
      follows.set(
        taskId,
        remote!.follow(taskId, request.principal, task, (next) => this.deliverRemote(subscription, taskId, next)),
      );
    }
    if (
      Object.keys(honoured).length === 0 ||
      (honoured.taskIds?.length === 0 && subscription.lists.size === 0 && subscription.resourceUris.size === 0)
    ) {
      // Nothing will ever be sent: close gracefully at once, as the SDK's own router does.
      subscription.close({ graceful: true });
    }
    return subscription;
  }

  /** A task changed visibly: one `notifications/tasks` frame to each stream watching it (T-29, T-31). */
  publishTask(record: TaskRecord): void {
    this.bus.publishTask(record);
  }

  /** The tool list changed: `notifications/tools/list_changed` to streams that asked for it. */
  publishToolsChanged(): void {
    this.bus.publishToolsChanged();
  }

  /** A resource's content changed: `notifications/resources/updated` to streams that watch its URI (§4.6). */
  publishResourceUpdated(uri: string): void {
    this.bus.publishResourceUpdated(uri);
  }

  /** A list changed: `notifications/<kind>/list_changed` to streams that asked for it (§4.6). */
  publishListChanged(kind: ListKind): void {
    this.bus.publishListChanged(kind);
  }

  /** Whether an open stream watches `taskId` (a cluster reads other instances' changes only for these). */
  watches(taskId: string): boolean {
    return this.bus.watches(taskId);
  }

  /** Every task id some open stream watches. */
  watchedTaskIds(): string[] {
    return this.bus.watchedTaskIds();
  }

  /** Graceful server close: every stream gets its listen result (§1.9). */
  closeAll(): void {
    for (const subscription of [...this.open]) subscription.close({ graceful: true });
  }

  /** A remote task's frame, as its server sent it with our id; a terminal one is the last (T-31). */
  private deliverRemote(subscription: ListenSubscription, taskId: string, task: JsonObject): void {
    if (subscription.closed || !subscription.taskIds.has(taskId)) return;
    subscription.notify('notifications/tasks', task);
    if (TERMINAL_STATUSES.has(task.status as TaskStatus)) {
      subscription.taskIds.delete(taskId);
      const follows = this.follows.get(subscription);
      follows?.get(taskId)?.();
      follows?.delete(taskId);
    }
  }

  /** The distinct resource URIs a listen watches (as many as a listen may name). */
  private uriList(requested: ListenFilter): string[] {
    return [...new Set(requested.resourceSubscriptions ?? [])].slice(0, this.maxTaskIds);
  }

  private forget(subscription: ListenSubscription): void {
    if (this.open.delete(subscription)) {
      const left = (this.openByPrincipal.get(subscription.principal) ?? 1) - 1;
      if (left > 0) this.openByPrincipal.set(subscription.principal, left);
      else this.openByPrincipal.delete(subscription.principal);
      const bytes = (this.uriBytesByPrincipal.get(subscription.principal) ?? 0) - uriBytes([...subscription.resourceUris]);
      if (bytes > 0) this.uriBytesByPrincipal.set(subscription.principal, bytes);
      else this.uriBytesByPrincipal.delete(subscription.principal);
    }
    this.bus.forget(subscription);
    for (const stop of this.follows.get(subscription)?.values() ?? []) stop();
    this.follows.delete(subscription);
  }
}

/** UTF-8 bytes of `uris` together. */
function uriBytes(uris: readonly string[]): number {
  let bytes = 0;
  for (const uri of uris) bytes += Buffer.byteLength(uri);
  return bytes;
}
