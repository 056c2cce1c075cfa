/**
 * A JSONL trace of every task actor's inspection events: the offline way to
 * see what the machines did (`taskvisor serve --trace FILE`).
 *
 * One line per `@xstate.actor`, `@xstate.event`, `@xstate.snapshot` and
 * `@xstate.action` event:
 *
 *   {"t":…,"type":"@xstate.snapshot","actorId":"x:3","taskId":"…","event":{…},"snapshot":{"value":…,"status":"active","context":{…}}}
 *
 * The inspect callback only queues the event (and its time): lines are
 * serialized once per tick and written through a WriteStream, so an actor
 * never waits for the disk. Task data is redacted by default (see `redact.ts`).
 */
import { closeSync, constants as fsConstants, createWriteStream, fchmodSync, fstatSync, ftruncateSync, lstatSync, openSync } from 'node:fs';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { sanitize } from './redact.js';

export interface TraceInspectorOptions {
  /** The JSONL file; created (or truncated) with mode 0600. */
  file: string;
  /** Replace task arguments, results, answers, input request params and error data by `"[redacted]"`. Default true. */
  redact?: boolean;
  /** Events held in memory while the disk is behind; past it events are dropped (and a `taskvisor.trace.dropped` line says how many). Default 100 000. */
  maxQueued?: number;
  /** Called once when the file cannot be written; the trace stops. Default: a line on stderr. */
  onError?: (error: Error) => void;
}

export interface TraceInspector {
  /** The inspection function for `createRuntime({ inspect })`. */
  readonly inspect: (event: InspectionEvent) => void;
  /** Writes what is queued, then closes the file. Events after this are ignored. */
  close(): Promise<void>;
  /** The file written. */
  readonly file: string;
}

/** One line of the trace. */
export interface TraceLine {
  /** Epoch ms of the inspection event. */
  t: number;
  type: '@xstate.actor' | '@xstate.event' | '@xstate.snapshot' | '@xstate.action' | 'taskvisor.trace.dropped';
  /** The actor's sessionId (`x:12`). */
  actorId?: string;
  systemId?: string;
  /** The root actor's sessionId, on lines about its children (a task actor has none: its run is the runtime's). */
  rootId?: string;
  /** The task the actor belongs to, when known. */
  taskId?: string;
  /** The W3C traceparent of the call that created the task: joins the line to the caller's trace. */
  traceparent?: string;
  /** `@xstate.actor`: the actor's id (a child's invoke id, or the sessionId of a root) and its parent. */
  name?: string;
  parentId?: string;
  /** `@xstate.event`: the sender, when an actor. */
  sourceId?: string;
  event?: unknown;
  snapshot?: { value?: unknown; status?: string; context?: unknown; error?: unknown };
  action?: { type: string; params?: unknown };
  /** `taskvisor.trace.dropped`: how many events were left out. */
  count?: number;
}

const TRACED = new Set(['@xstate.actor', '@xstate.event', '@xstate.snapshot', '@xstate.action']);

/** Why a `--trace` file was refused before anything was written. */
export class TraceFileRefusedError extends Error {
  override name = 'TraceFileRefusedError';
}

/**
 * Opens `file` for writing, truncated, mode 0600 — only when it is a regular
 * file or does not exist. A symbolic link is refused, not
 * followed: otherwise `--trace` would truncate whatever a link pointed at. So is a
 * FIFO, a device or a folder. `O_NOFOLLOW` closes the race between the check
 * and the open; the truncation happens only after `fstat` confirms a regular
 * file (a FIFO opened non-blocking never blocks).
 */
function openTraceFile(file: string): number {
  let existing: import('node:fs').Stats | undefined;
  try {
    existing = lstatSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (existing?.isSymbolicLink()) throw new TraceFileRefusedError('it is a symbolic link; a trace file is never followed through a link');
  if (existing && !existing.isFile()) throw new TraceFileRefusedError('it exists and is not a regular file');
  let fd: number;
  try {
    fd = openSync(file, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') {
      throw new TraceFileRefusedError('it is a symbolic link; a trace file is never followed through a link');
    }
    throw error;
  }
  try {
    if (!fstatSync(fd).isFile()) throw new TraceFileRefusedError('it exists and is not a regular file');
    ftruncateSync(fd, 0);
    // An existing file keeps its mode on open: tighten it too.
    fchmodSync(fd, 0o600);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  return fd;
}

/** Opens `file` (mode 0600) and returns the trace inspector writing to it. Throws at once if the file cannot be opened. */
export function createTraceInspector(options: TraceInspectorOptions): TraceInspector {
  const redact = options.redact ?? true;
  const maxQueued = options.maxQueued ?? 100_000;
  const onError =
    options.onError ?? ((error: Error) => process.stderr.write(`taskvisor: error: trace ${options.file}: ${error.message}\n`));
  const fd = openTraceFile(options.file);
  const stream = createWriteStream(options.file, { fd, autoClose: true });
  let queue: Array<{ t: number; event: InspectionEvent }> = [];
  let dropped = 0;
  let scheduled: NodeJS.Immediate | undefined;
  let closed = false;
  let failed = false;
  let closing: Promise<void> | undefined;

  stream.on('error', (error) => {
    if (failed) return;
    failed = true;
    queue = [];
    onError(error);
  });

  const flush = () => {
    scheduled = undefined;
    if (failed || queue.length === 0) return;
    const batch = queue;
    queue = [];
    let text = '';
    for (const { t, event } of batch) {
      try {
        text += JSON.stringify(lineOf(t, event, redact)) + '\n';
      } catch {
        // An event that cannot be serialized is left out rather than stop the trace.
      }
    }
    if (dropped > 0) {
      text += JSON.stringify({ t: Date.now(), type: 'taskvisor.trace.dropped', count: dropped } satisfies TraceLine) + '\n';
      dropped = 0;
    }
    stream.write(text);
  };

  return {
    file: options.file,
    inspect(event) {
      if (closed || failed || !TRACED.has(event.type)) return;
      if (queue.length >= maxQueued || stream.writableLength > 64 * 1024 * 1024) {
        dropped++;
        return;
      }
      queue.push({ t: Date.now(), event });
      scheduled ??= setImmediate(flush);
    },
    close() {
      if (closing) return closing;
      closed = true;
      if (scheduled) clearImmediate(scheduled);
      flush();
      closing = new Promise<void>((resolve) => {
        if (stream.destroyed) return resolve();
        stream.once('close', () => resolve());
        stream.end();
      });
      return closing;
    },
  };
}

/** The trace line of one inspection event. */
export function lineOf(t: number, event: InspectionEvent, redact: boolean): TraceLine {
  const actor = event.actorRef as AnyActorRef;
  const line: TraceLine = { t, type: event.type as TraceLine['type'], actorId: actor.sessionId };
  const systemId = (actor as { systemId?: string }).systemId;
  if (systemId !== undefined) line.systemId = systemId;
  if (event.rootId !== undefined && event.rootId !== actor.sessionId) line.rootId = event.rootId;
  const task = taskOf(actor);
  if (task.taskId !== undefined) line.taskId = task.taskId;
  if (task.traceparent !== undefined) line.traceparent = task.traceparent;
  switch (event.type) {
    case '@xstate.actor': {
      line.name = actor.id;
      if (actor._parent) line.parentId = actor._parent.sessionId;
      break;
    }
    case '@xstate.event':
      if (event.sourceRef) line.sourceId = event.sourceRef.sessionId;
      line.event = sanitize(event.event, redact);
      break;
    case '@xstate.snapshot': {
      line.event = sanitize(event.event, redact);
      const snapshot = event.snapshot as { value?: unknown; status?: string; context?: unknown; error?: unknown };
      line.snapshot = {
        ...('value' in snapshot ? { value: sanitize(snapshot.value, false) } : {}),
        ...(snapshot.status !== undefined ? { status: snapshot.status } : {}),
        ...(snapshot.context !== undefined ? { context: sanitize(snapshot.context, redact) } : {}),
        ...(snapshot.error !== undefined ? { error: sanitize(snapshot.error, redact) } : {}),
      };
      break;
    }
    case '@xstate.action': {
      const params = event.action.params;
      line.action = { type: event.action.type, ...(params !== undefined ? { params: sanitize(params, redact) } : {}) };
      break;
    }
  }
  return line;
}

/** The task id and traceparent in the root task actor's context (children included), when they can be read. */
function taskOf(actor: AnyActorRef): { taskId?: string; traceparent?: string } {
  let root: AnyActorRef = actor;
  while (root._parent) root = root._parent;
  try {
    const context = (root.getSnapshot() as { context?: { taskId?: unknown; trace?: { traceparent?: unknown } } } | undefined)?.context;
    return {
      ...(typeof context?.taskId === 'string' ? { taskId: context.taskId } : {}),
      ...(typeof context?.trace?.traceparent === 'string' ? { traceparent: context.trace.traceparent } : {}),
    };
  } catch {
    // Not initialised yet (cannot happen once the line is built a tick later, but never throw here).
    return {};
  }
}
