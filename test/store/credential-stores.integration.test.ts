/**
 * Every credential store kind passes the same contract: durable put/get,
 * delete, single-use take (also when raced), listing; files and rows hold
 * only sealed values under opaque names.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { CredentialCipher } from '../../src/store/credentials/CredentialCipher.js';
import type { CredentialStore } from '../../src/store/credentials/CredentialStore.js';
import { FileCredentialStore } from '../../src/store/credentials/FileCredentialStore.js';
import { MemoryCredentialStore } from '../../src/store/credentials/MemoryCredentialStore.js';
import { PostgresCredentialStore } from '../../src/store/credentials/PostgresCredentialStore.js';
import { SealedCredentials } from '../../src/store/credentials/SealedCredentials.js';
import { SqliteCredentialStore } from '../../src/store/credentials/SqliteCredentialStore.js';
import { freshSchema, TEST_PG_URL } from '../support/postgres.js';

const dirs: string[] = [];
const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tv-cred-'));
  dirs.push(dir);
  return dir;
}

const kinds: Array<[string, () => Promise<{ store: CredentialStore; reopen: () => CredentialStore; rawBytes: () => Promise<string> }>]> = [
  [
    'memory',
    async () => {
      const store = new MemoryCredentialStore();
      return { store, reopen: () => store, rawBytes: async () => JSON.stringify(await store.entries()) };
    },
  ],
  [
    'lowdb (files)',
    async () => {
      const dir = join(await tempDir(), 'credentials');
      const raw = async () => (await Promise.all((await readdir(dir)).map((file) => readFile(join(dir, file), 'utf8')))).join('\n');
      return { store: new FileCredentialStore(dir), reopen: () => new FileCredentialStore(dir), rawBytes: raw };
    },
  ],
  [
    'sqlite',
    async () => {
      const file = join(await tempDir(), 'credentials.sqlite');
      const raw = async () =>
        (await readFile(file)).toString('latin1') + (await readFile(`${file}-wal`).catch(() => Buffer.alloc(0))).toString('latin1');
      return { store: new SqliteCredentialStore(file), reopen: () => new SqliteCredentialStore(file), rawBytes: raw };
    },
  ],
  [
    'postgres',
    async () => {
      const { schema, drop } = await freshSchema('tv_cred');
      cleanups.push(drop);
      const store = new PostgresCredentialStore({ url: TEST_PG_URL, schema });
      return {
        store,
        reopen: () => new PostgresCredentialStore({ url: TEST_PG_URL, schema }),
        rawBytes: async () => JSON.stringify(await store.entries()),
      };
    },
  ],
];

for (const [kind, make] of kinds) {
  describe(`credential store: ${kind}`, () => {
    it('keeps sealed values under opaque names, takes once, survives a reopen', async () => {
      const { store, reopen, rawBytes } = await make();
      await store.open();
      const cipher = new CredentialCipher(randomBytes(32));
      const sealed = new SealedCredentials(store, cipher);
      await sealed.put('token/files/alice', { access_token: 'AT-in-clear-would-be-visible' });
      await sealed.put('pending/s1', { principal: 'alice' });
      assert.deepEqual(await sealed.get('token/files/alice'), { access_token: 'AT-in-clear-would-be-visible' });
      const raw = await rawBytes();
      assert.doesNotMatch(raw, /AT-in-clear|alice|token\/files/, 'neither the token nor the principal nor the record name in clear');

      const [first, second] = await Promise.all([sealed.take('pending/s1'), sealed.take('pending/s1')]);
      assert.deepEqual([first, second].filter(Boolean), [{ principal: 'alice' }], 'exactly one taker');

      assert.deepEqual(await sealed.names('token/'), ['token/files/alice']);
      if (reopen() !== store) {
        await store.close();
        const again = reopen();
        await again.open();
        assert.deepEqual(await new SealedCredentials(again, cipher).get('token/files/alice'), {
          access_token: 'AT-in-clear-would-be-visible',
        });
        assert.equal(await new SealedCredentials(again, cipher).delete('token/files/alice'), true);
        assert.equal(await new SealedCredentials(again, cipher).get('token/files/alice'), undefined);
        await again.close();
      } else {
        await store.close();
      }
    });
  });
}

describe('credential store: lowdb (files) folder', () => {
  it('is private', async () => {
    const dir = join(await tempDir(), 'credentials');
    const store = new FileCredentialStore(dir);
    await store.open();
    assert.equal((await stat(dir)).mode & 0o777, 0o700);
  });
});
