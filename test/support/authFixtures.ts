/**
 * Real identity material for the auth tests: key pairs generated with
 * `jose`, a JWKS document served over real HTTP on 127.0.0.1, signed JWTs,
 * and token files written to temp dirs with a chosen mode.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmod, writeFile } from 'node:fs/promises';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';

export interface Issuer {
  issuer: string;
  /** The served JWKS URL. */
  jwksUrl: string;
  /** How many times the JWKS was fetched. */
  readonly fetches: number;
  /** Signs a JWT with the issuer's key (`kid` set); claims default to a valid token for `audience`. */
  sign(
    claims: JWTPayload,
    options?: {
      audience?: string | string[];
      /** `exp` from now (jose's span syntax); default 5 minutes unless `claims` set `exp`; `false`: no `exp` claim. */
      expiresIn?: string | number | false;
      issuer?: string;
      key?: CryptoKey;
      kid?: string;
      alg?: string;
    },
  ): Promise<string>;
  /** A second key the JWKS does not publish (for forged tokens). */
  foreignKey: CryptoKey;
  publicKey: CryptoKey;
  /** Stops answering (the JWKS becomes unreachable). */
  close(): Promise<void>;
}

/** Generates an ES256 issuer key and serves its JWKS on 127.0.0.1 (port 0). */
export async function startIssuer(audience: string): Promise<Issuer> {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const foreign = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'key-1', alg: 'ES256', use: 'sig' };
  let fetches = 0;
  const server = createServer((req, res) => {
    if (req.url === '/jwks.json') {
      fetches++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [jwk] }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}/`;
  return {
    issuer,
    jwksUrl: `http://127.0.0.1:${port}/jwks.json`,
    get fetches() {
      return fetches;
    },
    foreignKey: foreign.privateKey,
    publicKey,
    async sign(claims, options = {}) {
      const jwt = new SignJWT(claims)
        .setProtectedHeader({ alg: options.alg ?? 'ES256', kid: options.kid ?? 'key-1' })
        .setIssuer(options.issuer ?? issuer)
        .setAudience(options.audience ?? audience);
      // An explicit iat (a token from the future, an old token) is kept.
      if (!('iat' in claims)) jwt.setIssuedAt();
      if (options.expiresIn === undefined) {
        if (!('exp' in claims)) jwt.setExpirationTime('5m');
      } else if (options.expiresIn !== false) jwt.setExpirationTime(options.expiresIn);
      return jwt.sign(options.key ?? privateKey);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Writes a token file (YAML) with `mode` (default 0600). */
export async function writeTokenFile(file: string, entries: Array<Record<string, unknown>>, mode = 0o600): Promise<string> {
  const yaml = `tokens:\n${entries
    .map(
      (entry) =>
        `  - ${Object.entries(entry)
          .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
          .join('\n    ')}`,
    )
    .join('\n')}\n`;
  await writeFile(file, yaml, { mode });
  await chmod(file, mode); // the umask may have removed bits the test wants
  return file;
}

/** A well-formed random-looking token nobody issued. */
export const UNKNOWN_TOKEN = 'tv_unknown_' + 'x'.repeat(32);
