/**
 * The static token file: a small YAML or JSON file mapping bearer tokens to
 * principals, for setups without an identity provider.
 *
 * ```yaml
 * tokens:
 *   - principal: alice
 *     sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08   # hex digest of the token
 *   - principal: ci-bot
 *     token: 2PqgJ3tq0m1kz6Lw3Q5bX7nYc8Vd9Ae0   # or the token itself
 *     scopes: [tasks]
 *     groups: [ci]   # tool policy rules may name groups
 * ```
 *
 * The file is a secret (or, with digests only, a list of who may call):
 * like ssh with its keys, the loader refuses a file that group or others
 * may read or write, unless told otherwise; files `taskvisor token add`
 * writes are created with mode 0600.
 */
import { createHash, randomBytes } from 'node:crypto';
import { open, readFile, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { parseDocument, stringify } from 'yaml';
import { z } from 'zod';
import { InvalidTokenError, type TokenVerifier, type VerifiedToken } from './TokenVerifier.js';

/** Shortest plaintext token accepted in a token file (about 96 bits as base64url). */
export const MIN_TOKEN_LENGTH = 16;
/** Token files larger than this are refused before parsing. */
const MAX_TOKEN_FILE_BYTES = 1024 * 1024;

/** A token file that cannot be used; `message` names the file and the field. */
export class TokenFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenFileError';
  }
}

const principalId = z.string().min(1).max(200);
const TokenEntrySchema = z
  .strictObject({
    principal: principalId,
    token: z.string().min(MIN_TOKEN_LENGTH, `a token must have at least ${MIN_TOKEN_LENGTH} characters`).optional(),
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'expected the 64 hex digits of a SHA-256 digest')
      .optional(),
    scopes: z.array(z.string().min(1)).optional(),
    /** Groups the principal belongs to, for tool policy rules (`toolPolicy.rules[].groups`). */
    groups: z.array(z.string().min(1).max(200)).max(100).optional(),
  })
  .refine((entry) => (entry.token === undefined) !== (entry.sha256 === undefined), { message: 'give exactly one of token or sha256' });
const TokenFileSchema = z.strictObject({ tokens: z.array(TokenEntrySchema) });

export interface TokenFileOptions {
  /**
   * Accept a file that group or others may read or write. Default `false`:
   * such a file is refused (POSIX only; Windows has no mode bits to check).
   */
  allowInsecurePermissions?: boolean;
}

/** The hex SHA-256 digest of a token, as a token file's `sha256` field holds it. */
export const tokenDigest = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/** Refuses a secret file others can read or write (mode & 0o077), unless allowed. */
export async function checkSecretFileMode(file: string, what: string, allowInsecure = false): Promise<void> {
  let info;
  try {
    info = await stat(file);
  } catch (error) {
    throw new TokenFileError(`${file}: cannot read the ${what}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  if (!info.isFile()) throw new TokenFileError(`${file}: the ${what} is not a regular file`);
  if (process.platform === 'win32' || allowInsecure) return;
  const loose = info.mode & 0o077;
  if (loose !== 0) {
    throw new TokenFileError(
      `${file}: the ${what} has mode ${(info.mode & 0o777).toString(8).padStart(4, '0')}; group and others must have no access ` +
        `(run: chmod 600 ${JSON.stringify(file)}), or set allowInsecurePermissions`,
    );
  }
}

/** Reads and checks a token file; returns digest → verified token. */
export async function loadTokenFile(file: string, options: TokenFileOptions = {}): Promise<Map<string, VerifiedToken>> {
  await checkSecretFileMode(file, 'token file', options.allowInsecurePermissions);
  const { size } = await stat(file);
  if (size > MAX_TOKEN_FILE_BYTES)
    throw new TokenFileError(`${file}: the token file is ${size} bytes; the limit is ${MAX_TOKEN_FILE_BYTES}`);
  const doc = parseDocument(await readFile(file, 'utf8'), { uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) throw new TokenFileError(`${file}: invalid YAML/JSON: ${doc.errors[0]!.message.split('\n')[0]}`);
  const parsed = TokenFileSchema.safeParse(doc.toJS({ maxAliasCount: 100 }) ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i > 0 ? '.' : ''}${String(part)}`)).join('');
    // Never echo a value from this file: it may be a token.
    const message =
      issue.code === 'unrecognized_keys'
        ? `unknown field ${issue.keys.join(', ')} (allowed: principal, token, sha256, scopes, groups)`
        : issue.message;
    throw new TokenFileError(`${file}: ${at || '(top level)'}: ${message}`);
  }
  const byDigest = new Map<string, VerifiedToken>();
  for (const [index, entry] of parsed.data.tokens.entries()) {
    const digest = (entry.sha256 ?? tokenDigest(entry.token!)).toLowerCase();
    if (byDigest.has(digest)) throw new TokenFileError(`${file}: tokens[${index}]: the same token is listed twice`);
    const principal = { id: entry.principal, ...(entry.groups?.length ? { groups: entry.groups } : {}) };
    byDigest.set(digest, { principal, ...(entry.scopes ? { scopes: entry.scopes } : {}) });
  }
  return byDigest;
}

/** A {@link TokenVerifier} over a token file, with `reload()` for rotation without a restart. */
export interface TokenFileVerifier extends TokenVerifier {
  /** Re-reads the file; on any error the previous tokens stay in force and the error is thrown. */
  reload(): Promise<void>;
  /** How many tokens are loaded. */
  readonly size: number;
}

/**
 * Loads `file` (see the module comment for its format) and verifies tokens
 * against it. Lookups go by the token's SHA-256 digest, so the plaintext is
 * never compared byte by byte (no timing signal about a near miss).
 */
export async function tokenFileVerifier(file: string, options: TokenFileOptions = {}): Promise<TokenFileVerifier> {
  let tokens = await loadTokenFile(file, options);
  const listeners = new Set<() => void>();
  return {
    // eslint-disable-next-line @typescript-eslint/require-await -- TokenVerifier port: an unknown token must reject, not throw synchronously
    async verify(token) {
      const found = tokens.get(tokenDigest(token));
      if (!found) throw new InvalidTokenError('The access token is not valid');
      return found;
    },
    async reload() {
      tokens = await loadTokenFile(file, options);
      // Open sessions whose token is gone end now.
      for (const listener of [...listeners]) listener();
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    get size() {
      return tokens.size;
    },
  };
}

/**
 * Adds a new random token (256 bits, base64url) for `principal` to `file`,
 * creating the file with mode 0600 when it does not exist. Only the token's
 * SHA-256 digest is stored; the token itself is returned once, to be handed
 * to the client. The file is replaced atomically (temp file, rename).
 */
export async function addTokenToFile(file: string, principal: string, options: { scopes?: string[] } = {}): Promise<string> {
  if (!principalId.safeParse(principal).success)
    throw new TokenFileError(`principal: expected 1 to 200 characters, got ${JSON.stringify(principal)}`);
  let existing: unknown[] = [];
  let exists = true;
  try {
    await stat(file);
  } catch {
    exists = false;
  }
  if (exists) {
    await loadTokenFile(file); // Refuses a loose or broken file before touching it.
    existing = ((parseDocument(await readFile(file, 'utf8')).toJS() ?? {}) as { tokens: unknown[] }).tokens;
  }
  const token = randomBytes(32).toString('base64url');
  const entry = { principal, sha256: tokenDigest(token), ...(options.scopes?.length ? { scopes: options.scopes } : {}) };
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  // Created with 0600 from the first byte (the mode argument applies before any content exists).
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(stringify({ tokens: [...existing, entry] }));
    await handle.chmod(0o600); // The umask can only remove bits; this pins the mode whatever it is.
    await handle.sync();
  } catch (error) {
    await handle.close();
    await unlink(temp).catch(() => {});
    throw error;
  }
  await handle.close();
  await rename(temp, file);
  return token;
}
