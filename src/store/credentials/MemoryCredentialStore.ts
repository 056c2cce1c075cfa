/** Credentials in a `Map`: tests and the `memory` task store (gone with the process, like its tasks). */
import type { CredentialStore } from './CredentialStore.js';

export class MemoryCredentialStore implements CredentialStore {
  readonly #values = new Map<string, string>();

  async open(): Promise<void> {}

  async get(name: string): Promise<string | undefined> {
    return this.#values.get(name);
  }

  async put(name: string, sealed: string): Promise<void> {
    this.#values.set(name, sealed);
  }

  async delete(name: string): Promise<boolean> {
    return this.#values.delete(name);
  }

  async take(name: string): Promise<string | undefined> {
    const value = this.#values.get(name);
    this.#values.delete(name);
    return value;
  }

  async entries(): Promise<Array<[string, string]>> {
    return [...this.#values.entries()];
  }

  async close(): Promise<void> {}
}
