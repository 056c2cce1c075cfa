/** Credentials in a `Map`: tests and the `memory` task store (gone with the process, like its tasks). */
import type { CredentialStore } from './CredentialStore.js';

export class MemoryCredentialStore implements CredentialStore {
  readonly #values = new Map<string, string>();

  open(): Promise<void> {
    return Promise.resolve();
  }

  get(name: string): Promise<string | undefined> {
    return Promise.resolve(this.#values.get(name));
  }

  put(name: string, sealed: string): Promise<void> {
    this.#values.set(name, sealed);
    return Promise.resolve();
  }

  delete(name: string): Promise<boolean> {
    return Promise.resolve(this.#values.delete(name));
  }

  take(name: string): Promise<string | undefined> {
    const value = this.#values.get(name);
    this.#values.delete(name);
    return Promise.resolve(value);
  }

  entries(): Promise<Array<[string, string]>> {
    return Promise.resolve([...this.#values.entries()]);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
