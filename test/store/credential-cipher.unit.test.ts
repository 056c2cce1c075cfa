/** Sealing of upstream credentials: AES-256-GCM bound to the record's name, keys parsed strictly. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { CredentialCipher, CredentialSealError, parseCredentialKey } from '../../src/store/credentials/CredentialCipher.js';
import { MemoryCredentialStore } from '../../src/store/credentials/MemoryCredentialStore.js';
import { SealedCredentials } from '../../src/store/credentials/SealedCredentials.js';

describe('CredentialCipher', () => {
  const cipher = new CredentialCipher(randomBytes(32));

  it('round-trips and never shows the plaintext', () => {
    const sealed = cipher.seal('n1', 'secret-access-token');
    assert.doesNotMatch(sealed, /secret/);
    assert.equal(cipher.open('n1', sealed), 'secret-access-token');
    assert.notEqual(cipher.seal('n1', 'secret-access-token'), sealed, 'a fresh IV per seal');
  });

  it('refuses a value moved to another record, tampered, or sealed under another key', () => {
    const sealed = cipher.seal('n1', 'x');
    assert.throws(() => cipher.open('n2', sealed), CredentialSealError);
    const parts = sealed.split('.');
    parts[3] = Buffer.from('y').toString('base64url');
    assert.throws(() => cipher.open('n1', parts.join('.')), CredentialSealError);
    assert.throws(() => new CredentialCipher(randomBytes(32)).open('n1', sealed), CredentialSealError);
    assert.throws(() => cipher.open('n1', 'plain text'), CredentialSealError);
  });

  it('names records opaquely and stably', () => {
    assert.match(cipher.storageName('token/files/alice'), /^[0-9a-f]{64}$/);
    assert.equal(cipher.storageName('a'), cipher.storageName('a'));
    assert.notEqual(cipher.storageName('a'), new CredentialCipher(randomBytes(32)).storageName('a'));
  });

  it('parses 32-byte keys as hex or base64 and refuses anything else with the source named', () => {
    const key = randomBytes(32);
    assert.deepEqual(parseCredentialKey(key.toString('hex'), 'k'), key);
    assert.deepEqual(parseCredentialKey(`${key.toString('base64')}\n`, 'k'), key);
    assert.deepEqual(parseCredentialKey(key.toString('base64url'), 'k'), key);
    assert.throws(() => parseCredentialKey('short', 'environment variable K'), /environment variable K: expected a 32-byte key/);
    assert.throws(() => parseCredentialKey(randomBytes(16).toString('hex'), 'k'), /32-byte/);
  });
});

describe('SealedCredentials', () => {
  it('reads a record sealed under another key as absent and says so', async () => {
    const store = new MemoryCredentialStore();
    const warnings: string[] = [];
    await new SealedCredentials(store, new CredentialCipher(Buffer.alloc(32, 1))).put('token/a/b', { t: 1 });
    const other = new SealedCredentials(store, new CredentialCipher(Buffer.alloc(32, 2)), (message) => warnings.push(message));
    assert.equal(await other.get('token/a/b'), undefined);
    const same = new SealedCredentials(store, new CredentialCipher(Buffer.alloc(32, 1)), (message) => warnings.push(message));
    assert.deepEqual(await same.get('token/a/b'), { t: 1 });
    assert.deepEqual(await same.names('token/'), ['token/a/b']);
    assert.deepEqual(await same.take('token/a/b'), { t: 1 });
    assert.equal(await same.take('token/a/b'), undefined);
    assert.equal(warnings.length, 0, 'another key reads nothing (its names differ), it is not damage');
  });
});
