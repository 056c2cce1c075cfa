/**
 * Encryption at rest of upstream credentials (OAuth tokens, client
 * registrations, pending authorizations). AES-256-GCM under a key the store
 * never holds: it comes from an environment variable or a key file named in
 * the config (docs/security.md "Upstream credentials").
 *
 * Two subkeys are derived from the master key with HKDF-SHA256: one seals the
 * values, one turns each record's name (`token/<upstream>/<principal>`) into
 * an opaque HMAC, so the store file alone does not even say which principal
 * authorized which upstream. The record's name is the GCM associated data: a
 * sealed value copied onto another principal's row fails to open.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const FORMAT = 'v1';

/** A sealed value that does not open: wrong key, tampered bytes, or moved to another record. */
export class CredentialSealError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialSealError';
  }
}

/** Seals and opens credential values; names records opaquely. */
export class CredentialCipher {
  readonly #sealKey: Buffer;
  readonly #nameKey: Buffer;

  /** `masterKey`: exactly 32 bytes (see {@link parseCredentialKey}). */
  constructor(masterKey: Buffer) {
    if (masterKey.length !== KEY_BYTES) throw new Error(`the credential key must be ${KEY_BYTES} bytes, got ${masterKey.length}`);
    this.#sealKey = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'taskvisor credentials seal v1', KEY_BYTES));
    this.#nameKey = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'taskvisor credentials name v1', KEY_BYTES));
  }

  /** The opaque storage name of the logical record `name` (hex HMAC-SHA256). */
  storageName(name: string): string {
    return createHmac('sha256', this.#nameKey).update(name, 'utf8').digest('hex');
  }

  /** `plaintext` sealed for the record `name`: `v1.<iv>.<tag>.<ciphertext>`, base64url parts. */
  seal(name: string, plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#sealKey, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(name, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [FORMAT, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  /** The plaintext of `sealed` for the record `name`; throws {@link CredentialSealError} when it does not open. */
  open(name: string, sealed: string): string {
    const parts = sealed.split('.');
    if (parts.length !== 4 || parts[0] !== FORMAT) throw new CredentialSealError('a stored credential is not in the sealed v1 format');
    const [, iv, tag, body] = parts as [string, string, string, string];
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#sealKey, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(name, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new CredentialSealError('a stored credential does not open with the configured key (another key, or tampered)');
    }
  }
}

/**
 * The 32-byte key in `text`: 64 hex digits or 43/44 base64 / base64url
 * characters (surrounding whitespace ignored). `source` names where it came
 * from in the error.
 */
export function parseCredentialKey(text: string, source: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64url');
  if (key.length !== KEY_BYTES || (!/^[0-9a-fA-F]{64}$/.test(trimmed) && !/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed))) {
    throw new Error(`${source}: expected a ${KEY_BYTES}-byte key as 64 hex digits or base64 (make one with: openssl rand -base64 32)`);
  }
  return key;
}

/** Where the credential key comes from (the config's `credentials` section). */
export type CredentialKeySource = { keyEnv: string } | { keyFile: string };

/**
 * Reads the key from its source. A key file must not be readable by group or
 * others (like an SSH key): a world-readable key is no key.
 */
export async function loadCredentialKey(source: CredentialKeySource, env: NodeJS.ProcessEnv = process.env): Promise<Buffer> {
  if ('keyEnv' in source) {
    const value = env[source.keyEnv];
    if (value === undefined || value === '') throw new Error(`credentials.keyEnv: environment variable ${source.keyEnv} is not set`);
    return parseCredentialKey(value, `environment variable ${source.keyEnv}`);
  }
  let mode: number;
  let text: string;
  try {
    mode = (await stat(source.keyFile)).mode & 0o777;
    text = await readFile(source.keyFile, 'utf8');
  } catch (error) {
    throw new Error(`credentials.keyFile: cannot read ${source.keyFile}: ${(error as Error).message}`, { cause: error });
  }
  if ((mode & 0o077) !== 0) {
    throw new Error(
      `credentials.keyFile: ${source.keyFile} has mode 0${mode.toString(8)}; chmod 600 it (the key must be private to the server's user)`,
    );
  }
  return parseCredentialKey(text, `credentials.keyFile ${source.keyFile}`);
}
