/**
 * The credential store port: opaque names to sealed strings, beside the task
 * store (one implementation per store kind). It never sees a plaintext
 * credential or a logical record name: {@link SealedCredentials} seals values
 * and hashes names before they get here (docs/security.md).
 */
export interface CredentialStore {
  /** Prepares the table, file or folder. Idempotent. */
  open(): Promise<void>;
  /** The sealed value stored under `name`, if any. */
  get(name: string): Promise<string | undefined>;
  /** Stores `sealed` under `name` durably (resolves once it survives a crash), replacing any value. */
  put(name: string, sealed: string): Promise<void>;
  /** Removes `name`; whether it existed. */
  delete(name: string): Promise<boolean>;
  /** Removes and returns `name` atomically: of two concurrent takes at most one gets the value (single-use records). */
  take(name: string): Promise<string | undefined>;
  /** Every stored `[name, sealed]` pair (for listing and revoking by principal; small: one row per grant). */
  entries(): Promise<Array<[name: string, sealed: string]>>;
  close(): Promise<void>;
}

/** The store kinds, as the config names them. */
export type CredentialStoreKind = 'memory' | 'lowdb' | 'sqlite' | 'postgres';
