/**
 * The runtime's fan-out of what a subscriber can watch: durable task changes
 * (published only once stored, I-1, I-2), list changes and resource updates.
 * It knows who watches what and nothing of the wire: each subscriber turns a
 * change into its own message (the listen streams of protocol/ do).
 *
 * Subscribers are indexed by task id, so the cost of one task change is
 * proportional to the subscribers watching that task, not to all of them.
 */
import { TERMINAL_STATUSES } from '../../machines/task/index.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';

/** The lists whose changes a subscriber can watch (§4.6). */
export type ListKind = 'tools' | 'prompts' | 'resources';
export const LIST_KINDS: readonly ListKind[] = ['tools', 'prompts', 'resources'];

/**
 * One change. A published change is one object handed to every subscriber it
 * goes to, so a subscriber can encode it once for all of them.
 */
export type Change =
  | { readonly kind: 'task'; readonly record: TaskRecord }
  | { readonly kind: 'list'; readonly list: ListKind }
  | { readonly kind: 'resource'; readonly uri: string };

/** One subscriber: who it is, what it watches, and where its changes go. */
export interface ChangeSubscriber {
  /** Only this principal's task changes ever reach it (T-10, I-7). */
  readonly principal: string;
  /** The task ids it is told about; the bus adds and removes the ones it watches (a terminal task leaves after its last change). */
  readonly taskIds: Set<string>;
  /** The lists whose changes it watches. */
  readonly lists: Set<ListKind>;
  /** The resource URIs whose updates it watches. */
  readonly resourceUris: Set<string>;
  receive(change: Change): void;
}

export class ChangeBus {
  private readonly byTask = new Map<string, Set<ChangeSubscriber>>();
  private readonly resourceWatchers = new Map<string, Set<ChangeSubscriber>>();
  private readonly listWatchers = new Map<ListKind, Set<ChangeSubscriber>>(LIST_KINDS.map((kind) => [kind, new Set()]));

  /** Task ids with at least one watcher (for leak checks). */
  get watchedTasks(): number {
    return this.byTask.size;
  }

  /** Whether a subscriber watches `taskId` (a cluster reads other instances' changes only for these). */
  watches(taskId: string): boolean {
    return this.byTask.has(taskId);
  }

  /** Every task id some subscriber watches. */
  watchedTaskIds(): string[] {
    return [...this.byTask.keys()];
  }

  watchTask(subscriber: ChangeSubscriber, taskId: string): void {
    subscriber.taskIds.add(taskId);
    let watchers = this.byTask.get(taskId);
    if (!watchers) this.byTask.set(taskId, (watchers = new Set()));
    watchers.add(subscriber);
  }

  unwatchTask(subscriber: ChangeSubscriber, taskId: string): void {
    subscriber.taskIds.delete(taskId);
    const watchers = this.byTask.get(taskId);
    if (!watchers) return;
    watchers.delete(subscriber);
    if (watchers.size === 0) this.byTask.delete(taskId);
  }

  watchList(subscriber: ChangeSubscriber, kind: ListKind): void {
    subscriber.lists.add(kind);
    this.listWatchers.get(kind)!.add(subscriber);
  }

  watchResource(subscriber: ChangeSubscriber, uri: string): void {
    subscriber.resourceUris.add(uri);
    let watchers = this.resourceWatchers.get(uri);
    if (!watchers) this.resourceWatchers.set(uri, (watchers = new Set()));
    watchers.add(subscriber);
  }

  /** Drops every watch of `subscriber` (it closed). */
  forget(subscriber: ChangeSubscriber): void {
    for (const watchers of this.listWatchers.values()) watchers.delete(subscriber);
    for (const uri of subscriber.resourceUris) {
      const watchers = this.resourceWatchers.get(uri);
      watchers?.delete(subscriber);
      if (watchers?.size === 0) this.resourceWatchers.delete(uri);
    }
    for (const taskId of [...subscriber.taskIds]) this.unwatchTask(subscriber, taskId);
  }

  /** A task changed visibly (its record is durable): to each subscriber watching it (T-29, T-31). */
  publishTask(record: TaskRecord): void {
    const watchers = this.byTask.get(record.taskId);
    if (!watchers) return;
    const change: Change = { kind: 'task', record };
    for (const subscriber of [...watchers]) this.deliverTask(subscriber, change);
  }

  /**
   * `record` to one subscriber, as a publish would give it: a subscriber just
   * opened gets its tasks' current state this way.
   */
  deliverTask(subscriber: ChangeSubscriber, change: Extract<Change, { kind: 'task' }>): void {
    const { record } = change;
    // Only the owner's subscribers ever watch a task (T-10); checked again here as defence in depth.
    if (record.owner !== subscriber.principal || !subscriber.taskIds.has(record.taskId)) return;
    subscriber.receive(change);
    // A terminal task changes no more: its last change is the last one sent (T-31).
    if (TERMINAL_STATUSES.has(record.status)) this.unwatchTask(subscriber, record.taskId);
  }

  /** The tool list changed. */
  publishToolsChanged(): void {
    this.publishListChanged('tools');
  }

  /** A list changed: to the subscribers watching it (§4.6). */
  publishListChanged(kind: ListKind): void {
    const watchers = this.listWatchers.get(kind)!;
    if (watchers.size === 0) return;
    const change: Change = { kind: 'list', list: kind };
    for (const subscriber of [...watchers]) subscriber.receive(change);
  }

  /** A resource's content changed: to the subscribers watching its URI (§4.6). */
  publishResourceUpdated(uri: string): void {
    const watchers = this.resourceWatchers.get(uri);
    if (!watchers) return;
    const change: Change = { kind: 'resource', uri };
    for (const subscriber of [...watchers]) subscriber.receive(change);
  }
}
