/**
 * `taskvisor/auth`: who a request comes from: bearer tokens checked against a
 * token file or as JWTs (docs/api.md, docs/security.md).
 */
export type { TokenVerifier, VerifiedToken } from './TokenVerifier.js';
export { InvalidTokenError } from './TokenVerifier.js';
export { bearerGate, type BearerAuthOptions, type BearerGate } from './bearer.js';
export {
  tokenFileVerifier,
  addTokenToFile,
  loadTokenFile,
  tokenDigest,
  TokenFileError,
  MIN_TOKEN_LENGTH,
  type TokenFileOptions,
  type TokenFileVerifier,
} from './tokenFile.js';
export { jwtVerifier, JwtConfigError, type JwtVerifierOptions } from './jwt.js';
