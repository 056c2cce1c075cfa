/**
 * Group commit of creates in the PostgreSQL store, against the real server
 * (I-1, T-07): the creates of one turn are one INSERT and one commit; a
 * commit that fails fails every create of its group and acknowledges none
 * (nothing of the group is stored, and the store goes on); a group holds at
 * most 256 creates; a lone create commits on its own; groups committing
 * together (a pool of 10: four at once) never both store one id.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { PostgresTaskStore } from '../../src/store/index.js';
import { freshSchema, pgQuery, TEST_PG_URL } from '../support/postgres.js';
import { makeRecord } from './fixtures.js';

/** Runs `fn` with an open store on a fresh schema, closed and dropped afterwards. */
async function withStore(fn: (store: PostgresTaskStore, schema: string) => Promise<void>, poolSize = 4): Promise<void> {
  const { schema, drop } = await freshSchema('tv_group');
  const store = new PostgresTaskStore({ url: TEST_PG_URL, schema, poolSize });
  try {
    await store.open();
    await fn(store, schema);
  } finally {
    await store.close();
    await drop();
  }
}

/** The ids stored in `schema`, sorted. */
async function storedIds(schema: string): Promise<string[]> {
  const result = await pgQuery<{ task_id: string }>(`SELECT task_id FROM ${pg.escapeIdentifier(schema)}.tasks ORDER BY task_id`);
  return result.rows.map((row) => row.task_id);
}

describe('PostgresTaskStore: group commit of creates', () => {
  it('a failed commit fails every create of its group, acknowledges none and stores none; later creates go on', () =>
    withStore(async (store, schema) => {
      const q = pg.escapeIdentifier(schema);
      // The server refuses one row: the statement carrying the whole group fails.
      await pgQuery(`CREATE FUNCTION ${q}.refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $fn$
        BEGIN IF NEW.task_id = 'poison' THEN RAISE EXCEPTION 'poisoned row'; END IF; RETURN NEW; END $fn$`);
      await pgQuery(`CREATE TRIGGER refuse_poison BEFORE INSERT ON ${q}.tasks FOR EACH ROW EXECUTE FUNCTION ${q}.refuse_poison()`);
      const before = store.commits;
      const ids = ['g1', 'g2', 'poison', 'g3', 'g4'];
      const outcomes = await Promise.allSettled(ids.map((taskId) => store.create(makeRecord({ taskId }))));
      for (const [i, outcome] of outcomes.entries()) {
        assert.equal(outcome.status, 'rejected', `${ids[i]} was acknowledged`);
        // Names the store and what the server said, never the caller's data.
        assert.match(String(outcome.reason), /cannot store tasks in postgres .*poisoned row/);
      }
      assert.equal(store.commits, before, 'a failed group is no commit');
      assert.deepEqual(await storedIds(schema), []);
      for (const taskId of ['g1', 'g2', 'g3']) assert.equal(await store.get(taskId), undefined);
      await store.create(makeRecord({ taskId: 'after' }));
      assert.deepEqual(await storedIds(schema), ['after']);
    }));

  it('a group holds at most 256 creates: 600 handed in at once are three commits, every one stored', () =>
    withStore(async (store, schema) => {
      const before = store.commits;
      const ids = Array.from({ length: 600 }, (_, i) => `b${String(i).padStart(4, '0')}`);
      await Promise.all(ids.map((taskId) => store.create(makeRecord({ taskId }))));
      assert.equal(store.commits - before, 3);
      assert.deepEqual(await storedIds(schema), ids);
    }));

  it('a lone create (c=1) is its own commit, one after another, each readable once acknowledged', () =>
    withStore(async (store) => {
      const before = store.commits;
      for (let i = 0; i < 5; i++) {
        const record = makeRecord({ taskId: `lone${i}` });
        await store.create(record);
        assert.equal(store.commits - before, i + 1);
        assert.equal((await store.get(record.taskId))?.taskId, record.taskId);
      }
    }));

  it('duplicates spread over groups committing together: exactly one create of each id wins, the rest get TaskExistsError', () =>
    withStore(async (store, schema) => {
      // Turn after turn while earlier groups still commit: the same ids in different groups, in different orders.
      const ids = Array.from({ length: 20 }, (_, i) => `d${String(i).padStart(2, '0')}`);
      // Each wave is settled-wrapped at once: a group may commit (and refuse) before the last wave is sent.
      const waves: Promise<PromiseSettledResult<unknown>[]>[] = [];
      for (let wave = 0; wave < 4; wave++) {
        const order = wave % 2 === 0 ? ids : [...ids].reverse();
        waves.push(Promise.allSettled(order.map((taskId) => store.create(makeRecord({ taskId })))));
        await new Promise((resolve) => setImmediate(resolve));
      }
      const outcomes = (await Promise.all(waves)).flat();
      assert.equal(outcomes.filter((outcome) => outcome.status === 'fulfilled').length, ids.length);
      for (const outcome of outcomes) {
        if (outcome.status === 'rejected') assert.equal((outcome.reason as Error).name, 'TaskExistsError', String(outcome.reason));
      }
      assert.deepEqual(await storedIds(schema), ids);
    }, 10));
});
