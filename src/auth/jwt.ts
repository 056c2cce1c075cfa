/**
 * JWT access tokens checked with `jose`: signature against a JWKS URL (keys
 * fetched on demand and cached, refetched on an unknown `kid`) or a key file
 * (PEM public key, a JWK or a JWKS), then `iss`, `aud` (the token must have
 * been issued for this server: MCP authorization, token audience binding),
 * `exp` (required) and `nbf` with a clock tolerance. The principal is the
 * `sub` claim or another configured string claim.
 */
import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWSAlgorithm,
} from 'jose';
import { LOOPBACK_HOSTS } from '../core/constants.js';
import { InvalidTokenError, type TokenVerifier, type VerifiedToken } from './TokenVerifier.js';

export interface JwtVerifierOptions {
  /** Where the issuer publishes its signing keys (https; http only for loopback hosts). Exactly one of `jwksUrl` and `keyFile`. */
  jwksUrl?: string;
  /** A file holding the public key: PEM (SPKI or X.509 certificate), a JWK, or a JWKS (JSON). */
  keyFile?: string;
  /** Required `iss` value. */
  issuer: string;
  /** Accepted `aud` values; the token's `aud` must contain one of them. */
  audience: string | string[];
  /** Claim naming the principal. Default `sub`. Must be a non-empty string in the token. */
  principalClaim?: string;
  /** Seconds of clock skew tolerated on `exp`, `nbf` and `iat`. Default 30. */
  clockToleranceSec?: number;
  /** Accepted `alg` values (e.g. `["RS256", "ES256"]`). Default: every asymmetric algorithm; `none` and HMAC never pass. */
  algorithms?: string[];
  /**
   * Oldest accepted token, by its `iat` claim, in ms; a token without `iat`
   * is then refused. Default: no limit beyond `exp`.
   */
  maxTokenAgeMs?: number;
  /** JWKS fetch timeout, ms. Default 5000. */
  jwksTimeoutMs?: number;
}

/** A key file or JWKS URL that cannot be used. */
export class JwtConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JwtConfigError';
  }
}

/** Checks a JWKS URL: absolute, https (http only on a loopback host: keys must not travel in clear text). */
export function checkJwksUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new JwtConfigError(`jwksUrl ${JSON.stringify(value)} is not an absolute URL`);
  }
  const loopback = LOOPBACK_HOSTS.includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new JwtConfigError(`jwksUrl ${JSON.stringify(value)} must use https (http is accepted only for localhost, 127.0.0.1 and [::1])`);
  }
  return url;
}

/** Reads a public key file: PEM (SPKI, certificate), a JWK, or a JWKS. */
export async function loadKeyFile(file: string): Promise<KeyObject | JWTVerifyGetKey> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new JwtConfigError(`${file}: cannot read the key file: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const trimmed = text.trim();
  try {
    if (trimmed.startsWith('{')) {
      const json = JSON.parse(trimmed) as { keys?: unknown; d?: unknown };
      // Casts: the parsed file goes to jose and node:crypto as the JWKS or JWK it claims to be; both check it
      // and throw, reported below as "not a public key".
      if (Array.isArray(json.keys)) return createLocalJWKSet(json as JSONWebKeySet);
      if (json.d !== undefined) throw new JwtConfigError(`${file}: this JWK holds a private key; give the public key only`);
      return createPublicKey({ key: json as JsonWebKey, format: 'jwk' });
    }
    if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(trimmed)) {
      throw new JwtConfigError(`${file}: this PEM holds a private key; give the public key only`);
    }
    return createPublicKey(trimmed);
  } catch (error) {
    if (error instanceof JwtConfigError) throw error;
    throw new JwtConfigError(`${file}: not a public key (expected PEM, a JWK or a JWKS): ${(error as Error).message}`);
  }
}

/**
 * Algorithms accepted when none are configured: public-key signatures only.
 * HS256 "signed" with the PEM public key as the HMAC secret is the classic
 * key-confusion forgery; it is refused as a bad token (401), not left to
 * fail inside `jose` as a server fault (503).
 */
export const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/** What a rejected token is told (never the token, never a claim's value). */
function describeRejection(error: unknown): string | undefined {
  if (error instanceof errors.JWTExpired) return 'The access token has expired';
  if (error instanceof errors.JWTClaimValidationFailed) return `The access token failed the ${error.claim} claim check (${error.reason})`;
  if (error instanceof errors.JOSEAlgNotAllowed) return 'The access token is signed with an algorithm this server does not accept';
  if (error instanceof errors.JWKSNoMatchingKey) return 'No key of the issuer matches the access token';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'The access token signature is not valid';
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) return undefined; // the issuer's fault, not the token's
  if (error instanceof errors.JOSEError) return 'The access token is not a valid JWT';
  return undefined;
}

/** Builds a {@link TokenVerifier} for JWT access tokens. Throws {@link JwtConfigError} on a bad URL or key file. */
export async function jwtVerifier(options: JwtVerifierOptions): Promise<TokenVerifier> {
  if ((options.jwksUrl === undefined) === (options.keyFile === undefined))
    throw new JwtConfigError('give exactly one of jwksUrl and keyFile');
  const key: KeyObject | JWTVerifyGetKey = options.jwksUrl
    ? createRemoteJWKSet(checkJwksUrl(options.jwksUrl), { timeoutDuration: options.jwksTimeoutMs ?? 5000 })
    : await loadKeyFile(options.keyFile!);
  const claim = options.principalClaim ?? 'sub';
  const toleranceSec = options.clockToleranceSec ?? 30;
  const verifyOptions = {
    issuer: options.issuer,
    audience: options.audience,
    clockTolerance: toleranceSec,
    // An access token without an expiry would be a password that never changes.
    requiredClaims: ['exp'],
    algorithms: (options.algorithms ?? ASYMMETRIC_ALGORITHMS) as JWSAlgorithm[],
    ...(options.maxTokenAgeMs !== undefined ? { maxTokenAge: options.maxTokenAgeMs / 1000 } : {}),
  };
  return {
    async verify(token): Promise<VerifiedToken> {
      let payload: JWTPayload;
      try {
        payload = (await jwtVerify(token, key, verifyOptions)).payload;
      } catch (error) {
        const description = describeRejection(error);
        if (description !== undefined) throw new InvalidTokenError(description);
        // With a key file nothing can be unreachable: whatever failed is the token's (a key of another type, 401).
        if (options.keyFile !== undefined) throw new InvalidTokenError('The access token does not fit the key this server checks it with');
        throw error; // JWKS unreachable or broken: a server fault (503), not the client's.
      }
      // A token issued in the future (beyond the clock tolerance) is refused; jose checks it only with maxTokenAge.
      const nowSec = Date.now() / 1000;
      if (typeof payload.iat === 'number' && payload.iat > nowSec + toleranceSec) {
        throw new InvalidTokenError('The access token failed the iat claim check (issued in the future)');
      }
      const id = payload[claim];
      if (typeof id !== 'string' || id === '') throw new InvalidTokenError(`The access token has no ${claim} claim naming the caller`);
      // When the token stops being valid: its exp, or sooner by maxTokenAgeMs (open connections end then).
      const expiries = [typeof payload.exp === 'number' ? payload.exp * 1000 : Infinity];
      if (options.maxTokenAgeMs !== undefined && typeof payload.iat === 'number') expiries.push(payload.iat * 1000 + options.maxTokenAgeMs);
      const expiresAt = Math.min(...expiries);
      return { principal: { id }, scopes: scopesOf(payload), ...(Number.isFinite(expiresAt) ? { expiresAt } : {}) };
    },
  };
}

/** OAuth scopes of a JWT: the space-separated `scope` claim (RFC 8693/9068) or an `scp` array. */
function scopesOf(payload: JWTPayload): string[] {
  if (typeof payload.scope === 'string') return payload.scope.split(' ').filter(Boolean);
  if (Array.isArray(payload.scp)) return payload.scp.filter((item): item is string => typeof item === 'string');
  return [];
}
