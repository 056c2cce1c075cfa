/**
 * Typed, sealed records over a {@link CredentialStore}: each logical record
 * (`token/<upstream>/<principal>`, …) is stored under the HMAC of its name,
 * its JSON sealed with that storage name as associated data. A value that
 * does not open (another key, tampering, a row copied onto another name)
 * reads as absent and is reported, never served: the principal authorizes
 * again.
 */
import { CredentialSealError, type CredentialCipher } from './CredentialCipher.js';
import type { CredentialStore } from './CredentialStore.js';

interface Envelope {
  /** The logical name, sealed with the value, so listing can find records by principal or upstream. */
  name: string;
  value: unknown;
}

export class SealedCredentials {
  constructor(
    readonly store: CredentialStore,
    private readonly cipher: CredentialCipher,
    private readonly onDamaged: (message: string) => void = (message) => process.stderr.write(`taskvisor: warning: ${message}\n`),
  ) {}

  async get<T>(name: string): Promise<T | undefined> {
    const storageName = this.cipher.storageName(name);
    return this.#open<T>(storageName, name, await this.store.get(storageName));
  }

  async put(name: string, value: unknown): Promise<void> {
    const storageName = this.cipher.storageName(name);
    const envelope: Envelope = { name, value };
    await this.store.put(storageName, this.cipher.seal(storageName, JSON.stringify(envelope)));
  }

  async delete(name: string): Promise<boolean> {
    return this.store.delete(this.cipher.storageName(name));
  }

  /** Reads and removes `name` at once (single-use records). */
  async take<T>(name: string): Promise<T | undefined> {
    const storageName = this.cipher.storageName(name);
    return this.#open<T>(storageName, name, await this.store.take(storageName));
  }

  /** The logical names of every record that opens whose name starts with `prefix`. */
  async names(prefix: string): Promise<string[]> {
    const names: string[] = [];
    for (const [storageName, sealed] of await this.store.entries()) {
      const envelope = this.#envelope(storageName, sealed);
      if (envelope?.name.startsWith(prefix)) names.push(envelope.name);
    }
    return names;
  }

  #open<T>(storageName: string, name: string, sealed: string | undefined): T | undefined {
    if (sealed === undefined) return undefined;
    const envelope = this.#envelope(storageName, sealed);
    return envelope?.name === name ? (envelope.value as T) : undefined;
  }

  #envelope(storageName: string, sealed: string): Envelope | undefined {
    try {
      return JSON.parse(this.cipher.open(storageName, sealed)) as Envelope;
    } catch (error) {
      if (!(error instanceof CredentialSealError)) throw error;
      this.onDamaged(`${error.message}; the record is ignored and its principal must authorize again`);
      return undefined;
    }
  }
}
