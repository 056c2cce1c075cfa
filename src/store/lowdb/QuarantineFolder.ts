/**
 * The lowdb store's `<dir>/quarantine/`: a damaged record file is moved here
 * byte for byte with a `.reason.json` note beside it (why, when, whose), and
 * never served again. A damaged journal batch is copied here whole.
 */
import { copyFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ownerOfStored } from '../../tasks/storedOwner.js';
import { errorCode, fsyncDir } from '../DurableJsonFile.js';
import { PRIVATE_DIR_MODE } from '../privateDir.js';
import type { SetAsideNote } from '../kit/KitTaskStore.js';
import type { QuarantinedRecord } from '../TaskStore.js';
import { readdirIfAny } from './files.js';

const NOTE = '.reason.json';

export class QuarantineFolder {
  /** Ids set aside, with why and whose (when known). */
  readonly #notes = new Map<string, { reason: string; owner: string | undefined }>();

  constructor(readonly dir: string) {}

  note(taskId: string): SetAsideNote | undefined {
    return this.#notes.get(taskId);
  }

  has(taskId: string): boolean {
    return this.#notes.has(taskId);
  }

  /** Loads the notes (open). A note written before owners were kept gets the owner from the kept bytes. */
  async load(): Promise<void> {
    for (const name of await readdirIfAny(this.dir)) {
      if (!name.endsWith(NOTE)) continue;
      try {
        const note = JSON.parse(await readFile(join(this.dir, name), 'utf8')) as { taskId?: unknown; reason?: unknown; owner?: unknown };
        if (typeof note.taskId !== 'string') continue;
        const owner =
          typeof note.owner === 'string'
            ? note.owner
            : ownerOfStored(await readFile(join(this.dir, name.slice(0, -NOTE.length)), 'utf8').catch(() => ''), note.taskId);
        this.#notes.set(note.taskId, { reason: String(note.reason), owner });
      } catch {
        // A damaged note: the file it describes stays in quarantine all the same.
      }
    }
  }

  /**
   * Renames a record file in here (durably) with its note; `false` when the
   * file is gone. `owner`: known from the index, else read from what the bytes still tell.
   */
  async move(file: string, shard: string, taskId: string, reason: string, owner: string | undefined): Promise<boolean> {
    await mkdir(this.dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    const target = join(this.dir, `${shard}-${basename(file)}`);
    const known = owner ?? ownerOfStored(await readFile(file, 'utf8').catch(() => ''), taskId);
    const note: Omit<QuarantinedRecord, 'stored'> = {
      taskId,
      reason,
      quarantinedAt: Date.now(),
      ...(known === undefined ? {} : { owner: known }),
    };
    await writeFile(`${target}${NOTE}`, `${JSON.stringify(note)}\n`, { mode: 0o600 });
    try {
      await rename(file, target);
    } catch (error) {
      await rm(`${target}${NOTE}`, { force: true });
      if (errorCode(error) === 'ENOENT') return false;
      throw error;
    }
    await fsyncDir(this.dir);
    await fsyncDir(dirname(file));
    this.#notes.set(taskId, { reason, owner: known });
    return true;
  }

  /** Keeps a copy of a journal batch holding damaged lines (the batch itself is replayed for the rest). */
  async keepBatch(path: string): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    await copyFile(path, join(this.dir, `journal-${basename(path)}`));
    await fsyncDir(this.dir);
  }

  /** Every record set aside, oldest first. */
  async list(): Promise<QuarantinedRecord[]> {
    const out: QuarantinedRecord[] = [];
    for (const name of await readdirIfAny(this.dir)) {
      if (!name.endsWith(NOTE)) continue;
      const note = JSON.parse(await readFile(join(this.dir, name), 'utf8')) as Omit<QuarantinedRecord, 'stored'>;
      const stored = await readFile(join(this.dir, name.slice(0, -NOTE.length)), 'utf8').catch(() => '');
      const owner = this.#notes.get(note.taskId)?.owner;
      out.push({
        taskId: note.taskId,
        reason: note.reason,
        quarantinedAt: note.quarantinedAt,
        stored,
        ...(owner === undefined ? {} : { owner }),
      });
    }
    return out.sort((a, b) => a.quarantinedAt - b.quarantinedAt || (a.taskId < b.taskId ? -1 : 1));
  }
}
