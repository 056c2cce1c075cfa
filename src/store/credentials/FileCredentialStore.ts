/**
 * Credentials of the `lowdb` store: one durable file per record in a private
 * `credentials/` folder beside the task files. One file per record (not one
 * document) because the server and `taskvisor upstreams auth` may both write
 * while the server runs: each write is a temp file, fdatasync and rename of
 * its own record, so two writers of different records never lose each
 * other's change, and a reader always sees a whole value.
 */
import { readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DurableJsonFile, errorCode, fsyncDir } from '../DurableJsonFile.js';
import { ensurePrivateDir } from '../privateDir.js';
import type { CredentialStore } from './CredentialStore.js';

/** Stored names are hex HMACs (SealedCredentials); anything else is refused before it becomes a path. */
const NAME = /^[0-9a-f]{64}$/;

interface RecordFile {
  sealed: string;
}

export class FileCredentialStore implements CredentialStore {
  readonly #dir: string;
  readonly #warn: (message: string) => void;

  /** `dir`: the credentials folder (created 0700). */
  constructor(dir: string, warn: (message: string) => void = (message) => process.stderr.write(`taskvisor: warning: ${message}\n`)) {
    this.#dir = dir;
    this.#warn = warn;
  }

  async open(): Promise<void> {
    await ensurePrivateDir(this.#dir, this.#warn);
  }

  async get(name: string): Promise<string | undefined> {
    return (await this.#file(name).read())?.sealed;
  }

  async put(name: string, sealed: string): Promise<void> {
    await this.#file(name).write({ sealed });
  }

  async delete(name: string): Promise<boolean> {
    const path = this.#path(name);
    try {
      await rm(path);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return false;
      throw error;
    }
    await fsyncDir(this.#dir);
    return true;
  }

  async take(name: string): Promise<string | undefined> {
    // rename is atomic: of two takers only one moves the file away, the other gets ENOENT.
    const claimed = `${this.#path(name)}.taken.${process.pid}.${Math.random().toString(36).slice(2)}`;
    try {
      await rename(this.#path(name), claimed);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    }
    try {
      return (JSON.parse(await readFile(claimed, 'utf8')) as RecordFile).sealed;
    } finally {
      await rm(claimed, { force: true });
      await fsyncDir(this.#dir);
    }
  }

  async entries(): Promise<Array<[string, string]>> {
    const names = (await readdir(this.#dir)).map((entry) => entry.slice(0, -5)).filter((name) => NAME.test(name));
    const found: Array<[string, string]> = [];
    for (const name of names) {
      const value = await this.get(name);
      if (value !== undefined) found.push([name, value]);
    }
    return found;
  }

  async close(): Promise<void> {}

  #path(name: string): string {
    if (!NAME.test(name)) throw new Error('credential record names are 64 hex digits');
    return join(this.#dir, `${name}.json`);
  }

  #file(name: string): DurableJsonFile<RecordFile> {
    return new DurableJsonFile<RecordFile>(this.#path(name));
  }
}
