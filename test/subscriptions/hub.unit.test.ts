/**
 * Robustness of listen streams at unit level: `SubscriptionHub` and
 * `ListenSubscription` with fake sinks and a fake task reader. The
 * acknowledgement goes first, only the owner's ids are honoured, a change
 * costs deliveries only to its own watchers, a consumer that stops reading is
 * cut off without hurting anyone else, nothing is left behind after close,
 * and a graceful close answers every listen with its result.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SubscriptionHub, type TaskReader } from '../../src/protocol/SubscriptionHub.js';
import type { ListenSink } from '../../src/protocol/ListenSubscription.js';
import { ListenFrame } from '../../src/protocol/ListenFrame.js';
import { toDetailedTask } from '../../src/protocol/wire.js';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';
import type { TaskStatus } from '../../machines/task/index.js';

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
const SERVER_INFO = { name: 'hub-test', version: '0.0.0' };

type Message = Record<string, any>;

function record(taskId: string, status: TaskStatus = 'working', owner = 'alice', at = 1): TaskRecord {
  return {
    taskId,
    owner,
    tool: 'tool',
    status,
    createdAt: 1,
    lastUpdatedAt: at,
    ttlMs: null,
    version: at,
    machineVersion: 1,
    ...(status === 'input_required'
      ? {
          inputRequests: {
            name: { method: 'elicitation/create', params: { message: 'Name?', requestedSchema: { type: 'object', properties: {} } } },
          },
        }
      : {}),
    ...(status === 'completed' ? { result: { content: [{ type: 'text', text: 'done' }] } } : {}),
  };
}

/** A sink that records what it is sent; `pending` is what the consumer has not taken (it never takes anything unless told). */
class FakeSink implements ListenSink {
  readonly sent: Message[] = [];
  /** The JSON text of each message sent, as the transport would write it. */
  readonly texts: string[] = [];
  ended = false;
  pending = 0;
  constructor(
    private readonly counter?: { sends: number },
    private readonly reads = true,
  ) {}
  send(message: Message | string): void {
    assert.equal(this.ended, false, 'send after end');
    const text = typeof message === 'string' ? message : JSON.stringify(message);
    this.texts.push(text);
    this.sent.push(JSON.parse(text) as Message);
    if (this.counter) this.counter.sends++;
    if (!this.reads) this.pending++;
  }
  backlog(): number {
    return this.pending;
  }
  end(): void {
    this.ended = true;
  }
}

/** A reader over a fixed set of records: unknown and foreign ids throw, as the supervisor does. */
function readerOf(records: TaskRecord[]): TaskReader {
  const byId = new Map(records.map((entry) => [entry.taskId, entry]));
  return async (taskId, principal) => {
    const found = byId.get(taskId);
    if (!found || found.owner !== principal) throw new Error('Task not found');
    return found;
  };
}

const tasksFrames = (sink: FakeSink) => sink.sent.filter((message) => message.method === 'notifications/tasks');

describe('SubscriptionHub', () => {
  it('sends the acknowledgement first, then the frames queued while it was pending, then nothing stale', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const hub = new SubscriptionHub({
      // The read is slow: changes published meanwhile are queued behind the acknowledgement.
      readTask: async (taskId, principal) => {
        await gate;
        return readerOf([record('t1', 'working', 'alice', 1)])(taskId, principal);
      },
      serverInfo: SERVER_INFO,
    });
    const sink = new FakeSink();
    const opening = hub.openListen({ id: 'L1', principal: 'alice', requested: { taskIds: ['t1'] }, sink });
    hub.publishTask(record('t1', 'input_required', 'alice', 2));
    assert.equal(sink.sent.length, 0, 'nothing goes out before the acknowledgement');
    release();
    await opening;
    assert.equal(sink.sent[0]?.method, 'notifications/subscriptions/acknowledged', JSON.stringify(sink.sent));
    assert.deepEqual(sink.sent[0]?.params.notifications, { taskIds: ['t1'] });
    assert.equal(sink.sent[0]?.params._meta[SUBSCRIPTION_ID], 'L1');
    // The change published during the open arrives right after the acknowledgement. The state read before
    // it is older and is not sent after it: the client's last word for t1 is input_required, as it is.
    const frames = tasksFrames(sink);
    assert.deepEqual(
      frames.map((frame) => frame.params.status),
      ['input_required'],
      JSON.stringify(sink.sent),
    );
    for (const message of sink.sent) assert.equal(message.params._meta[SUBSCRIPTION_ID], 'L1', 'every frame is stamped');
    // Later changes follow in order.
    hub.publishTask(record('t1', 'working', 'alice', 3));
    hub.publishTask(record('t1', 'completed', 'alice', 4));
    assert.deepEqual(
      tasksFrames(sink).map((frame) => frame.params.status),
      ['input_required', 'working', 'completed'],
    );
    assert.equal(hub.watchedTasks, 0, 'a terminal task leaves the index after its last frame');
  });

  it('with nothing published during the open, the acknowledgement is followed by each task’s current state', async () => {
    const hub = new SubscriptionHub({ readTask: readerOf([record('t1', 'input_required'), record('t2')]), serverInfo: SERVER_INFO });
    const sink = new FakeSink();
    await hub.openListen({ id: 7, principal: 'alice', requested: { taskIds: ['t1', 't2'] }, sink });
    assert.equal(sink.sent[0]?.method, 'notifications/subscriptions/acknowledged');
    assert.deepEqual(
      tasksFrames(sink)
        .map((frame) => [frame.params.taskId, frame.params.status])
        .sort(),
      [
        ['t1', 'input_required'],
        ['t2', 'working'],
      ],
    );
  });

  it('acknowledges only the owner’s ids: foreign and unknown ones are silently left out and never reported', async () => {
    const hub = new SubscriptionHub({
      readTask: readerOf([record('mine'), record('theirs', 'working', 'bob')]),
      serverInfo: SERVER_INFO,
    });
    const sink = new FakeSink();
    await hub.openListen({ id: 'L', principal: 'alice', requested: { taskIds: ['mine', 'theirs', 'nope', 'mine'] }, sink });
    assert.deepEqual(sink.sent[0]?.params.notifications, { taskIds: ['mine'] });
    assert.ok(!sink.sent.some((message) => 'error' in message), 'no error for the ids left out');
    assert.equal(hub.watchedTasks, 1, 'only the accepted id is indexed');
    const before = sink.sent.length;
    hub.publishTask(record('theirs', 'completed', 'bob', 2));
    hub.publishTask(record('nope', 'completed', 'alice', 2));
    assert.equal(sink.sent.length, before, 'changes of ids left out are not sent');
    // Defence in depth: a record of the accepted id with another owner is not sent either.
    hub.publishTask(record('mine', 'completed', 'bob', 3));
    assert.equal(sink.sent.length, before);

    // Nothing honoured at all: the stream is acknowledged empty and closed gracefully at once.
    const empty = new FakeSink();
    await hub.openListen({ id: 'E', principal: 'alice', requested: { taskIds: ['theirs'] }, sink: empty });
    assert.deepEqual(empty.sent[0]?.params.notifications, { taskIds: [] });
    assert.equal(empty.sent[1]?.result?.resultType, 'complete');
    assert.equal(empty.ended, true);
  });

  it('one task change costs deliveries only to that task’s watchers (1,000 streams on other tasks)', async () => {
    const others = Array.from({ length: 1000 }, (_, index) => record(`other-${index}`));
    const hub = new SubscriptionHub({ readTask: readerOf([...others, record('hot')]), serverInfo: SERVER_INFO });
    const counter = { sends: 0 };
    for (const [index, other] of others.entries()) {
      await hub.openListen({ id: `o${index}`, principal: 'alice', requested: { taskIds: [other.taskId] }, sink: new FakeSink(counter) });
    }
    const hot = new FakeSink(counter);
    await hub.openListen({ id: 'hot', principal: 'alice', requested: { taskIds: ['hot'] }, sink: hot });
    assert.equal(hub.size, 1001);
    assert.equal(hub.watchedTasks, 1001);
    counter.sends = 0;
    hub.publishTask(record('hot', 'input_required', 'alice', 2));
    hub.publishTask(record('hot', 'working', 'alice', 3));
    assert.equal(counter.sends, 2, 'two changes, two sends in all');
    assert.deepEqual(
      tasksFrames(hot)
        .slice(-2)
        .map((frame) => frame.params.status),
      ['input_required', 'working'],
    );
    counter.sends = 0;
    hub.publishTask(record('unwatched', 'completed', 'alice', 2));
    assert.equal(counter.sends, 0, 'a task nobody watches costs no send');
    hub.closeAll();
  });

  it('a change fanned out to many streams: each frame carries its own stream’s id and is otherwise byte-identical', async () => {
    // Serialised once (ListenFrame), the id spliced in per stream (T-31, D-07). A pure speed change cannot fail
    // first: this pins that the shared text is the same message every stream got when each serialised its own.
    const ids = Array.from({ length: 300 }, (_, index): string | number =>
      index % 3 === 0 ? index : index % 3 === 1 ? `s-${index}` : `q"\\${index}\u00e9\u2028`,
    );
    const hub = new SubscriptionHub({
      readTask: readerOf([record('hot')]),
      serverInfo: SERVER_INFO,
      maxStreamsPerPrincipal: ids.length,
    });
    const sinks = new Map<string | number, FakeSink>();
    for (const id of ids) {
      const sink = new FakeSink();
      sinks.set(id, sink);
      await hub.openListen({ id, principal: 'alice', requested: { taskIds: ['hot'], toolsListChanged: true }, sink });
    }
    const changed = record('hot', 'input_required', 'alice', 2);
    hub.publishTask(changed);
    hub.publishToolsChanged();
    const placeholder = '"<subscription id>"';
    for (const frameIndex of [0, 1, 2, 3]) {
      // 0: acknowledgement, 1: current state, 2: the change, 3: tools list changed.
      const shared = new Set<string>();
      for (const [id, sink] of sinks) {
        const text = sink.texts[frameIndex]!;
        const message = JSON.parse(text) as Message;
        assert.equal(message.params._meta[SUBSCRIPTION_ID], id, `frame ${frameIndex} stamped with its own stream’s id`);
        const own = `${JSON.stringify(SUBSCRIPTION_ID)}:${JSON.stringify(id)}`;
        assert.equal(text.split(own).length, 2, `its own id exactly once: ${text}`);
        shared.add(text.replace(own, `${JSON.stringify(SUBSCRIPTION_ID)}:${placeholder}`));
      }
      assert.equal(shared.size, 1, `frame ${frameIndex} is byte-identical across streams but for the id`);
    }
    // The same message as a per-stream serialisation of the full DetailedTask (T-31, D-03).
    const expected = toDetailedTask(changed);
    for (const [id, sink] of sinks) {
      assert.deepEqual(JSON.parse(sink.texts[2]!), {
        jsonrpc: '2.0',
        method: 'notifications/tasks',
        params: { ...expected, _meta: { ...((expected._meta as object | undefined) ?? {}), [SUBSCRIPTION_ID]: id } },
      });
    }
    hub.closeAll();
  });

  it('a frame’s own _meta is kept and a subscription id it carried (a forwarded frame) is replaced by the stream’s own', () => {
    const frame = new ListenFrame('notifications/tasks', {
      taskId: 't',
      status: 'working',
      _meta: { [SUBSCRIPTION_ID]: 'upstream-id', 'example.com/trace': { depth: 1 } },
    });
    for (const id of ['L1', 42]) {
      assert.deepEqual(JSON.parse(frame.textFor(id)), {
        jsonrpc: '2.0',
        method: 'notifications/tasks',
        params: { taskId: 't', status: 'working', _meta: { 'example.com/trace': { depth: 1 }, [SUBSCRIPTION_ID]: id } },
      });
    }
    assert.deepEqual(JSON.parse(new ListenFrame('notifications/tools/list_changed', {}).textFor('x')), {
      jsonrpc: '2.0',
      method: 'notifications/tools/list_changed',
      params: { _meta: { [SUBSCRIPTION_ID]: 'x' } },
    });
  });

  it('a stream whose backlog passes maxBacklog is closed with a JSON-RPC error naming why; other streams and the task go on', async () => {
    const hub = new SubscriptionHub({ readTask: readerOf([record('t1'), record('t2')]), serverInfo: SERVER_INFO, maxBacklog: 5 });
    const stuck = new FakeSink(undefined, false);
    const healthy = new FakeSink();
    const other = new FakeSink();
    await hub.openListen({ id: 'stuck', principal: 'alice', requested: { taskIds: ['t1'] }, sink: stuck });
    await hub.openListen({ id: 'healthy', principal: 'alice', requested: { taskIds: ['t1'] }, sink: healthy });
    await hub.openListen({ id: 'other', principal: 'alice', requested: { taskIds: ['t2'] }, sink: other });
    for (let at = 2; at < 20; at++) hub.publishTask(record('t1', at % 2 ? 'working' : 'input_required', 'alice', at));
    const last = stuck.sent.at(-1)!;
    assert.equal(last.id, 'stuck');
    assert.equal(last.error?.code, -32603);
    assert.match(last.error?.message, /not reading its listen stream \(more than 5 messages pending\)/);
    assert.equal(stuck.ended, true);
    assert.ok(stuck.sent.length <= 5 + 3, `the cut-off came once the backlog passed 5 (${stuck.sent.length} sent)`);
    assert.equal(hub.size, 2);
    // The healthy stream on the same task saw every change, and still does.
    assert.equal(tasksFrames(healthy).length, 1 + 18);
    hub.publishTask(record('t1', 'completed', 'alice', 30));
    hub.publishTask(record('t2', 'completed', 'alice', 30));
    assert.equal(tasksFrames(healthy).at(-1)?.params.status, 'completed');
    assert.equal(tasksFrames(other).at(-1)?.params.status, 'completed');
    assert.equal(hub.watchedTasks, 0);
  });

  it('a stream that queues past maxBacklog before its acknowledgement is cut off too', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const hub = new SubscriptionHub({
      readTask: async (taskId, principal) => {
        await gate;
        return readerOf([record('t1')])(taskId, principal);
      },
      serverInfo: SERVER_INFO,
      maxBacklog: 3,
    });
    const sink = new FakeSink();
    const opening = hub.openListen({ id: 'early', principal: 'alice', requested: { taskIds: ['t1'] }, sink });
    for (let at = 2; at < 8; at++) hub.publishTask(record('t1', 'working', 'alice', at));
    release();
    await opening;
    assert.equal(sink.ended, true);
    assert.match(sink.sent.at(-1)?.error?.message, /not reading/);
    assert.ok(
      !sink.sent.some((message) => message.method === 'notifications/subscriptions/acknowledged'),
      'no acknowledgement after the error',
    );
    assert.equal(hub.size, 0);
    assert.equal(hub.watchedTasks, 0);
  });

  it('opening and closing 1,000 streams leaves nothing behind (counts back to 0, heap growth bounded)', async (t) => {
    const tasks = Array.from({ length: 50 }, (_, index) => record(`t${index}`));
    const hub = new SubscriptionHub({ readTask: readerOf(tasks), serverInfo: SERVER_INFO });
    const gc = (globalThis as { gc?: () => void }).gc;
    const heap = () => {
      gc?.();
      return process.memoryUsage().heapUsed;
    };
    const round = async () => {
      const subscriptions = [];
      for (let index = 0; index < 1000; index++) {
        subscriptions.push(
          await hub.openListen({
            id: `r${index}`,
            principal: 'alice',
            requested: { taskIds: [`t${index % 50}`, `t${(index + 1) % 50}`], toolsListChanged: index % 2 === 0 },
            sink: new FakeSink(),
          }),
        );
      }
      assert.equal(hub.size, 1000);
      assert.equal(hub.watchedTasks, 50);
      hub.publishToolsChanged();
      // Half go away as dropped clients, half by a graceful close.
      for (const [index, subscription] of subscriptions.entries()) subscription.close(index % 2 ? { graceful: false } : { graceful: true });
      assert.equal(hub.size, 0);
      assert.equal(hub.watchedTasks, 0);
    };
    await round();
    const baseline = heap();
    for (let index = 0; index < 5; index++) await round();
    const growth = heap() - baseline;
    if (gc) {
      t.diagnostic(`heap growth over 5 more rounds of 1,000 streams: ${(growth / 1024).toFixed(0)} KiB`);
      assert.ok(growth < 8 * 1024 * 1024, `heap grew ${(growth / 1024 / 1024).toFixed(1)} MiB over 5,000 streams`);
    } else t.diagnostic('run with --expose-gc to check heap growth too; counts checked');
    // After the closes, changes and tool-list changes reach nobody.
    hub.publishTask(record('t1', 'completed', 'alice', 9));
    hub.publishToolsChanged();
  });

  it('closeAll() answers every open listen with its graceful result and ends the stream', async () => {
    const hub = new SubscriptionHub({ readTask: readerOf([record('t1'), record('t2')]), serverInfo: SERVER_INFO });
    const sinks = [new FakeSink(), new FakeSink(), new FakeSink()];
    await hub.openListen({ id: 'a', principal: 'alice', requested: { taskIds: ['t1'] }, sink: sinks[0]! });
    await hub.openListen({ id: 2, principal: 'alice', requested: { taskIds: ['t1', 't2'] }, sink: sinks[1]! });
    await hub.openListen({ id: 'tools', principal: 'alice', requested: { toolsListChanged: true }, sink: sinks[2]! });
    hub.closeAll();
    for (const [index, id] of ['a', 2, 'tools'].entries()) {
      const sink = sinks[index]!;
      assert.deepEqual(sink.sent.at(-1), {
        jsonrpc: '2.0',
        id,
        result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: id, 'io.modelcontextprotocol/serverInfo': SERVER_INFO } },
      });
      assert.equal(sink.ended, true);
    }
    assert.equal(hub.size, 0);
    assert.equal(hub.watchedTasks, 0);
    // A second close, or a change afterwards, sends nothing more.
    const counts = sinks.map((sink) => sink.sent.length);
    hub.closeAll();
    hub.publishTask(record('t1', 'completed', 'alice', 5));
    assert.deepEqual(
      sinks.map((sink) => sink.sent.length),
      counts,
    );
  });
});
