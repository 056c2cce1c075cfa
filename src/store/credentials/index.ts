/**
 * Upstream credentials at rest: the port, one implementation per store kind,
 * and the sealing layer every caller goes through (docs/security.md).
 */
import { dirname, join } from 'node:path';
import type { TaskStoreConfig } from '../index.js';
import type { CredentialStore } from './CredentialStore.js';
import { FileCredentialStore } from './FileCredentialStore.js';
import { MemoryCredentialStore } from './MemoryCredentialStore.js';
import { PostgresCredentialStore } from './PostgresCredentialStore.js';
import { SqliteCredentialStore } from './SqliteCredentialStore.js';

export {
  CredentialCipher,
  CredentialSealError,
  loadCredentialKey,
  parseCredentialKey,
  type CredentialKeySource,
} from './CredentialCipher.js';
export type { CredentialStore, CredentialStoreKind } from './CredentialStore.js';
export { FileCredentialStore } from './FileCredentialStore.js';
export { MemoryCredentialStore } from './MemoryCredentialStore.js';
export { PostgresCredentialStore } from './PostgresCredentialStore.js';
export { SealedCredentials } from './SealedCredentials.js';
export { SqliteCredentialStore } from './SqliteCredentialStore.js';

/**
 * The credential store beside the task store `config` selects: a map for
 * `memory`, a `credentials/` folder in the lowdb folder, `credentials.sqlite`
 * beside the sqlite file, a table in the PostgreSQL schema.
 */
export function createCredentialStore(config: TaskStoreConfig): CredentialStore {
  switch (config.kind) {
    case 'memory':
      return new MemoryCredentialStore();
    case 'lowdb':
      return new FileCredentialStore(join(config.dir, 'credentials'));
    case 'sqlite':
      return new SqliteCredentialStore(join(dirname(config.file), 'credentials.sqlite'));
    case 'postgres':
      return new PostgresCredentialStore({ url: config.url, ...(config.schema ? { schema: config.schema } : {}) });
  }
}
