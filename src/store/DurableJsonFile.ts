/**
 * A lowdb 7 adapter that makes `write()` durable. Stock `JSONFile` (steno)
 * writes a temp file and renames it but never fsyncs anything, so an
 * acknowledged write can vanish on power loss or a kernel crash
 * (reference/xstate-notes.md §2). The store's durability contract (T-07, I-1)
 * needs more: a write resolves only once file *and* directory entry are on
 * stable storage.
 */
import { open, rename, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Adapter } from 'lowdb';

/** Observation points for tests: called after each successful fsync. */
export interface DurableJsonFileHooks {
  /** `'file'` after the temp file's `fdatasync`, `'dir'` after the folder's `fsync`. */
  onSync?: (kind: 'file' | 'dir') => void;
}

export interface DurableJsonFileOptions {
  hooks?: DurableJsonFileHooks;
  /** Permission bits of new files. Default `0o600`: records may carry tool arguments and results. */
  mode?: number;
}

/** Makes temp names unique across every adapter instance in this process. */
let tempCounter = 0;

/**
 * JSON file adapter for `new Low(adapter, default)`.
 *
 * `write(data)`: compact JSON → unique temp file in the same folder →
 * `fdatasync` → close → `rename` over the target → `fsync` the folder. A crash
 * at any point leaves either the old or the new file, never a torn one; a
 * leftover `.<name>.<pid>.<n>.tmp` file is for the owner to delete.
 *
 * `read()`: `null` when the file does not exist; invalid JSON throws an error
 * naming the file.
 */
export class DurableJsonFile<T> implements Adapter<T> {
  readonly path: string;
  readonly #hooks: DurableJsonFileHooks;
  readonly #mode: number;

  constructor(path: string, options: DurableJsonFileOptions = {}) {
    this.path = path;
    this.#hooks = options.hooks ?? {};
    this.#mode = options.mode ?? 0o600;
  }

  /** The parsed file, or `null` when it does not exist. */
  async read(): Promise<T | null> {
    let handle: FileHandle;
    try {
      handle = await open(this.path, 'r');
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return null;
      throw new Error(`cannot open ${this.path} for reading: ${errorMessage(error)}`, { cause: error });
    }
    let text: string;
    try {
      text = await handle.readFile({ encoding: 'utf8' });
    } catch (error) {
      throw new Error(`cannot read ${this.path}: ${errorMessage(error)}`, { cause: error });
    } finally {
      await handle.close().catch(() => undefined);
    }
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new Error(`invalid JSON in ${this.path} (${text.length} chars): ${errorMessage(error)}`, { cause: error });
    }
  }

  /** Durably replaces the file with `data` as compact JSON; resolves once it would survive power loss. */
  async write(data: T): Promise<void> {
    // Stringify before the first await so later mutations of `data` by the caller cannot leak in.
    const text: string | undefined = JSON.stringify(data);
    if (text === undefined) throw new Error(`cannot write ${this.path}: value is not JSON-serializable`);
    await this.writeText(text);
  }

  /**
   * {@link write} for a value already serialized (the lowdb store's checkpoint
   * writes journaled JSON as it is). `syncFolder: false` leaves the folder's
   * fsync to the caller, who must make it before relying on the new name
   * (the checkpoint syncs each folder once for all the files it wrote there).
   */
  async writeText(text: string, { syncFolder = true }: { syncFolder?: boolean } = {}): Promise<void> {
    const dir = dirname(this.path);
    const temp = join(dir, `.${basename(this.path)}.${process.pid}.${++tempCounter}.tmp`);
    let handle: FileHandle | undefined;
    try {
      // 'wx': a unique name that already exists means something else is writing here; never clobber it.
      handle = await open(temp, 'wx', this.#mode);
      await handle.writeFile(text, { encoding: 'utf8' });
      // I-1/T-07: the data must be on disk before the rename publishes it, or a
      // crash could leave a renamed-but-empty file behind.
      await handle.datasync();
      this.#hooks.onSync?.('file');
      await handle.close();
      handle = undefined;
      await rename(temp, this.path);
    } catch (error) {
      await handle?.close().catch(() => undefined);
      await rm(temp, { force: true }).catch(() => undefined);
      throw new Error(`cannot write ${this.path} (via ${temp}): ${errorMessage(error)}`, { cause: error });
    }
    // I-1/T-07: the rename lives in the directory; without this fsync the new
    // name can be lost on power loss even though the data blocks were synced.
    if (!syncFolder) return;
    await fsyncDir(dir);
    this.#hooks.onSync?.('dir');
  }
}

/**
 * `fsync`s a directory so that entries created, renamed or removed in it are
 * durable (POSIX: the entry lives in the directory, not in the file).
 */
export async function fsyncDir(dir: string): Promise<void> {
  let handle: FileHandle;
  try {
    handle = await open(dir, 'r');
  } catch (error) {
    throw new Error(`cannot open directory ${dir} to fsync it: ${errorMessage(error)}`, { cause: error });
  }
  try {
    await handle.sync();
  } catch (error) {
    throw new Error(`cannot fsync directory ${dir}: ${errorMessage(error)}`, { cause: error });
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** The `code` of a Node system error (`'ENOENT'`, …), if any. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string') return error.code;
  return undefined;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
