/**
 * One listen-stream notification serialised once for every stream it goes to.
 *
 * A change watched by many streams yields the same frame on each of them except
 * for `_meta["io.modelcontextprotocol/subscriptionId"]` (T-31, D-07). The
 * message is serialised once into the JSON text before and after that id's
 * value; each stream's frame is the two halves around its own id, so the
 * cost of a change does not grow with a full serialisation per stream.
 *
 * A transport that writes bytes (WebSocket) takes the frame as UTF-8: the
 * halves are encoded once per frame, and the bytes for one subscription id
 * once per id — clients that number their requests alike (the listen of many
 * connections is often request 1) share one buffer.
 */
import { SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server';
import type { JsonObject } from '../core/json.js';
import type { Change } from '../runtime/ChangeBus.js';
import { toDetailedTask } from './wire.js';

const SUBSCRIPTION_ID_MEMBER = `${JSON.stringify(SUBSCRIPTION_ID_META_KEY)}:`;
const TAIL = '}}}';
const TAIL_BYTES = Buffer.from(TAIL);

/** Opens a serialised JSON object for more members: `{}` → `{`, `{"a":1}` → `{"a":1,`. */
function openObject(json: string): string {
  return json === '{}' ? '{' : `${json.slice(0, -1)},`;
}

export class ListenFrame {
  /** The JSON text up to (and including the key of) the subscription id. */
  private readonly head: string;
  /** The JSON text after the subscription id. */
  private readonly tail = TAIL;
  /** `head` as UTF-8, encoded on the first `bytesFor`. */
  private headBytes: Buffer | undefined;
  /** The bytes already built, per subscription id. */
  private readonly bytesById = new Map<string | number, Buffer>();

  /**
   * @param method the notification's method, e.g. `notifications/tasks`.
   * @param params its params; an own `_meta` is kept, with the subscription id set last.
   */
  constructor(
    readonly method: string,
    readonly params: JsonObject,
  ) {
    const { _meta: meta, ...rest } = params;
    const otherMeta: JsonObject = { ...((meta as JsonObject | undefined) ?? {}) };
    // The stream's own id replaces whatever id the params carried (a remote server's, for a forwarded frame).
    delete otherMeta[SUBSCRIPTION_ID_META_KEY];
    this.head =
      `{"jsonrpc":"2.0","method":${JSON.stringify(method)},"params":${openObject(JSON.stringify(rest))}` +
      `"_meta":${openObject(JSON.stringify(otherMeta))}${SUBSCRIPTION_ID_MEMBER}`;
  }

  /** The frame's JSON text for the stream `subscriptionId`: every frame carries its own stream's id (T-31, D-07). */
  textFor(subscriptionId: string | number): string {
    return `${this.head}${JSON.stringify(subscriptionId)}${this.tail}`;
  }

  /**
   * `textFor(subscriptionId)` as UTF-8 bytes, built once per id. The buffer is
   * shared by every stream with that id: it must not be modified (a
   * WebSocket server does not mask what it sends, RFC 6455 §5.1).
   */
  bytesFor(subscriptionId: string | number): Buffer {
    let bytes = this.bytesById.get(subscriptionId);
    if (bytes === undefined) {
      const head = (this.headBytes ??= Buffer.from(this.head));
      const id = Buffer.from(JSON.stringify(subscriptionId));
      bytes = Buffer.concat([head, id, TAIL_BYTES], head.length + id.length + TAIL_BYTES.length);
      this.bytesById.set(subscriptionId, bytes);
    }
    return bytes;
  }
}

/** The frame of each change, built on its first stream: the bus hands one change object to every stream it goes to. */
const framesOfChanges = new WeakMap<Change, ListenFrame>();

/**
 * The listen notification of a change of the runtime's bus, serialised once
 * however many streams it goes to: a task change is the full DetailedTask, as
 * `tasks/get` would return it, without `resultType` (T-31, D-03).
 */
export function changeFrame(change: Change): ListenFrame {
  let frame = framesOfChanges.get(change);
  if (frame === undefined) {
    frame =
      change.kind === 'task'
        ? new ListenFrame('notifications/tasks', toDetailedTask(change.record))
        : change.kind === 'list'
          ? new ListenFrame(`notifications/${change.list}/list_changed`, {})
          : new ListenFrame('notifications/resources/updated', { uri: change.uri });
    framesOfChanges.set(change, frame);
  }
  return frame;
}
