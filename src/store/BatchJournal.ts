/**
 * Group commit for {@link LowdbTaskStore}, through the kit's `GroupCommit`.
 * Every write the store accepts while the previous batch is on its way to the
 * disk (or within one turn of the event loop) goes into one batch file,
 * `<dir>/journal/<seq>.jsonl`, one record per line, made durable with one
 * `fdatasync` of the file and one `fsync` of the folder: two fsyncs per batch
 * instead of two per task, and each caller is answered only once its batch is
 * durable (I-1, T-07).
 *
 * A batch file is written under a temp name, synced, then renamed: a visible
 * batch file is always complete, and a crash mid-batch leaves only a temp file
 * whose writes were never acknowledged (the owner deletes it on open). A
 * failed batch fails exactly its members and leaves nothing behind.
 *
 * The records reach their per-task files later (the store's checkpoint), after
 * which the batch files are removed with {@link BatchJournal.dropThrough};
 * until then `open()` replays them.
 */
import { mkdir, open, readdir, readFile, rename, rm, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { errorCode, errorMessage, fsyncDir, type DurableJsonFileHooks } from './DurableJsonFile.js';
import { GroupCommit, succeeded, type WriteOutcome } from './kit/GroupCommit.js';
import { PRIVATE_DIR_MODE } from './privateDir.js';

/** A committed batch file read back by {@link BatchJournal.load}. */
export interface JournalBatch {
  seq: number;
  path: string;
  /** The lines it holds, in write order (each one record's JSON). */
  lines: string[];
}

interface Member {
  line: string;
  /** Runs synchronously once the batch is durable, before any caller (or checkpoint) can observe the journal again. */
  apply: (seq: number) => void;
}

/** Batch file names: the sequence number, zero-padded so names sort in commit order. */
const BATCH_NAME = /^(\d{16})\.jsonl$/;

export class BatchJournal {
  readonly dir: string;
  readonly #hooks: DurableJsonFileHooks;
  readonly #batches = new GroupCommit<Member>(
    (batch) => this.#commit(batch),
    (error, count) => new Error(`cannot commit ${count} write(s) to ${this.dir}: ${errorMessage(error)}`, { cause: error }),
  );
  #nextSeq = 1;
  /** Committed batch files not yet dropped, oldest first. */
  readonly #files: { seq: number; path: string }[] = [];
  #droppedThrough = 0;
  #committedThrough = 0;

  constructor(dir: string, hooks: DurableJsonFileHooks = {}) {
    this.dir = dir;
    this.#hooks = hooks;
  }

  /** Highest sequence number whose batch is durable and applied. */
  get committedThrough(): number {
    return this.#committedThrough;
  }

  /** Every batch up to this sequence number is gone from disk: its records live in their task files. */
  get droppedThrough(): number {
    return this.#droppedThrough;
  }

  /** Number of batch files on disk (committed, not yet dropped). */
  get backlog(): number {
    return this.#files.length;
  }

  /**
   * Creates the folder if needed and reads the committed batches, oldest
   * first. `owner`: this process owns the store, so leftover temp files
   * (batches never acknowledged) are deleted; a read-only view leaves them.
   * Unreadable batch files are passed to `onDamaged` and not returned.
   */
  async load(owner: boolean, onDamaged: (path: string, error: Error) => void): Promise<JournalBatch[]> {
    if (owner) {
      const made = await mkdir(this.dir, { recursive: true, mode: PRIVATE_DIR_MODE });
      // I-1: the folder entry must be durable before a batch in it is acknowledged.
      if (made !== undefined) await fsyncDir(join(this.dir, '..'));
    }
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return [];
      throw error;
    }
    const batches: JournalBatch[] = [];
    for (const name of names.sort()) {
      const path = join(this.dir, name);
      if (name.endsWith('.tmp')) {
        if (owner) await rm(path, { force: true });
        continue;
      }
      const match = BATCH_NAME.exec(name);
      if (!match) continue;
      const seq = Number(match[1]);
      this.#nextSeq = Math.max(this.#nextSeq, seq + 1);
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch (error) {
        onDamaged(path, error instanceof Error ? error : new Error(String(error)));
        continue;
      }
      this.#files.push({ seq, path });
      batches.push({ seq, path, lines: text.split('\n').filter((line) => line.length > 0) });
    }
    this.#committedThrough = this.#nextSeq - 1;
    return batches;
  }

  /**
   * Adds `line` to the next batch; resolves once that batch is durable, after
   * `apply(seq)` ran. Rejects (and `apply` never runs) when the batch failed.
   * `line` may hold several records, one per line (`putMany`): they share
   * one member, so they land or fail together.
   */
  append(line: string, apply: (seq: number) => void): Promise<void> {
    return this.#batches.add({ line, apply });
  }

  /** Resolves once every appended line has been committed or failed. */
  idle(): Promise<void> {
    return this.#batches.idle();
  }

  /** Durably removes every batch file with a sequence number up to `seq` (their records are in task files now). */
  async dropThrough(seq: number): Promise<void> {
    const dropped = this.#files.filter((file) => file.seq <= seq);
    if (dropped.length === 0) {
      this.#droppedThrough = Math.max(this.#droppedThrough, seq);
      return;
    }
    for (const file of dropped) {
      try {
        await unlink(file.path);
      } catch (error) {
        if (errorCode(error) !== 'ENOENT')
          throw new Error(`cannot remove journal batch ${file.path}: ${errorMessage(error)}`, { cause: error });
      }
      this.#files.splice(this.#files.indexOf(file), 1);
    }
    // I-1: a removed batch must stay removed, or a crash would replay records over a later delete.
    await fsyncDir(this.dir);
    this.#droppedThrough = Math.max(this.#droppedThrough, seq);
  }

  /** One batch file for the batch; each member applied once it is durable, before `committedThrough` moves. */
  async #commit(batch: readonly Member[]): Promise<WriteOutcome<void>[]> {
    const seq = this.#nextSeq++;
    const path = join(this.dir, `${String(seq).padStart(16, '0')}.jsonl`);
    await this.#writeBatch(seq, path, batch.map((member) => `${member.line}\n`).join(''));
    this.#files.push({ seq, path });
    // Applied before committedThrough moves: a checkpoint that sees this seq also sees its records.
    for (const member of batch) member.apply(seq);
    this.#committedThrough = seq;
    return batch.map(() => succeeded(undefined));
  }

  /** temp file → write → fdatasync → rename → fsync the folder (I-1, T-07): the same steps as {@link DurableJsonFile}, once per batch. */
  async #writeBatch(seq: number, path: string, text: string): Promise<void> {
    const temp = join(this.dir, `.${String(seq).padStart(16, '0')}.${process.pid}.tmp`);
    let handle: FileHandle | undefined;
    try {
      handle = await open(temp, 'wx', 0o600);
      await handle.writeFile(text, { encoding: 'utf8' });
      await handle.datasync();
      this.#hooks.onSync?.('file');
      await handle.close();
      handle = undefined;
      await rename(temp, path);
    } catch (error) {
      await handle?.close().catch(() => undefined);
      await rm(temp, { force: true }).catch(() => undefined);
      throw error;
    }
    try {
      await fsyncDir(this.dir);
    } catch (error) {
      // Its callers are told it failed: it must not be replayed later either (best effort; the error stands).
      await rm(path, { force: true }).catch(() => undefined);
      throw error;
    }
    this.#hooks.onSync?.('dir');
  }
}
