/**
 * The in-process parts of identity forwarding: the per-principal connection
 * pool (lazy, bounded, LRU, idle close, never under a busy connection,
 * reopened when the credential changes, closed on revocation) and the
 * callers' token registry (expiry, idle, bound, revocation by recheck).
 */
import assert from 'node:assert/strict';
import type { AuthProvider } from '@modelcontextprotocol/client';
import { describe, it } from 'node:test';
import { CallerCredentials } from '../../src/auth/CallerCredentials.js';
import { InvalidTokenError, type TokenVerifier } from '../../src/auth/TokenVerifier.js';
import type { Principal } from '../../src/core/principal.js';
import { PassthroughCredentials } from '../../src/upstreams/identity/PassthroughCredentials.js';
import {
  UpstreamConnectionPool,
  UpstreamPoolFullError,
  type PooledConnection,
} from '../../src/upstreams/identity/UpstreamConnectionPool.js';
import {
  UpstreamAuthorizationRequiredError,
  type UpstreamConnectionAuth,
  type UpstreamCredentialSource,
} from '../../src/upstreams/identity/UpstreamCredentialSource.js';

class FakeConnection implements PooledConnection {
  isOpen = true;
  busy = false;
  constructor(
    readonly principal: string,
    readonly auth: UpstreamConnectionAuth,
  ) {}
  close(): Promise<void> {
    this.isOpen = false;
    return Promise.resolve();
  }
}

/** A pool over fake connections, a settable clock, and headers per principal. */
function poolOf(limits: { maxConnections?: number; idleMs?: number } = {}) {
  let now = 1_000;
  const headers = new Map<string, string>();
  const opened: FakeConnection[] = [];
  const source: UpstreamCredentialSource = {
    connectionAuth: (upstream: string, principal: Principal) => {
      if (principal.id === 'nobody') return Promise.reject(new UpstreamAuthorizationRequiredError(upstream, 'not authorized'));
      return Promise.resolve({ headers: { authorization: headers.get(principal.id) ?? `Bearer ${principal.id}` } });
    },
  };
  const pool = new UpstreamConnectionPool<FakeConnection>({
    upstream: 'up',
    credentials: source,
    open: (auth, principal) => {
      const connection = new FakeConnection(principal.id, auth);
      opened.push(connection);
      return Promise.resolve(connection);
    },
    limits,
    now: () => now,
  });
  return {
    pool,
    opened,
    headers,
    advance: (ms: number) => (now += ms),
  };
}

describe('UpstreamConnectionPool', () => {
  it('opens one connection per principal, lazily, and reuses it', async () => {
    const { pool, opened } = poolOf();
    assert.equal(pool.size, 0);
    const alice = await pool.acquire({ id: 'alice' });
    assert.equal(await pool.acquire({ id: 'alice' }), alice);
    const bob = await pool.acquire({ id: 'bob' });
    assert.notEqual(bob, alice);
    assert.deepEqual(
      opened.map((connection) => [connection.principal, connection.auth.headers?.authorization]),
      [
        ['alice', 'Bearer alice'],
        ['bob', 'Bearer bob'],
      ],
    );
    await pool.close();
    assert.ok(opened.every((connection) => !connection.isOpen));
  });

  it('refuses an unauthorized principal before opening anything', async () => {
    const { pool, opened } = poolOf();
    await assert.rejects(pool.acquire({ id: 'nobody' }), UpstreamAuthorizationRequiredError);
    assert.equal(opened.length, 0);
    await pool.close();
  });

  it('stays within maxConnections: the least recently used idle connection is evicted', async () => {
    const { pool, opened } = poolOf({ maxConnections: 2 });
    const a = await pool.acquire({ id: 'a' });
    await pool.acquire({ id: 'b' });
    await pool.acquire({ id: 'a' }); // a is now the most recently used
    await pool.acquire({ id: 'c' });
    assert.equal(pool.size, 2);
    assert.equal(opened.find((connection) => connection.principal === 'b')!.isOpen, false, 'b was the least recently used');
    assert.equal(a.isOpen, true);
    await pool.close();
  });

  it('never evicts a busy connection; full of busy ones, a new principal gets a retryable refusal', async () => {
    const { pool } = poolOf({ maxConnections: 2 });
    const a = await pool.acquire({ id: 'a' });
    const b = await pool.acquire({ id: 'b' });
    a.busy = true;
    await pool.acquire({ id: 'c' });
    assert.equal(a.isOpen, true);
    assert.equal(b.isOpen, false);
    const c = pool.peek('c')!;
    c.busy = true;
    await assert.rejects(pool.acquire({ id: 'd' }), UpstreamPoolFullError);
    assert.equal(pool.size, 2);
    await pool.close();
  });

  it('closes connections idle for idleMs, but not a busy one', async () => {
    const { pool, advance } = poolOf({ idleMs: 10_000 });
    const a = await pool.acquire({ id: 'a' });
    const b = await pool.acquire({ id: 'b' });
    b.busy = true;
    advance(5_000);
    assert.equal(pool.sweep(), 0);
    advance(5_000);
    assert.equal(pool.sweep(), 1);
    assert.equal(a.isOpen, false);
    assert.equal(b.isOpen, true);
    assert.equal(pool.size, 1);
    await pool.close();
  });

  it('opens a fresh connection when the principal’s credential changes, and closes the old one', async () => {
    const { pool, headers } = poolOf();
    const first = await pool.acquire({ id: 'a' });
    headers.set('a', 'Bearer renewed');
    const second = await pool.acquire({ id: 'a' });
    assert.notEqual(second, first);
    assert.equal(first.isOpen, false);
    assert.equal(second.auth.headers?.authorization, 'Bearer renewed');
    await pool.close();
  });

  it('closes a principal’s connection on revocation, and replaces one the upstream closed', async () => {
    const { pool } = poolOf();
    const a = await pool.acquire({ id: 'a' });
    pool.closePrincipal('a');
    assert.equal(a.isOpen, false);
    assert.equal(pool.peek('a'), undefined);
    const again = await pool.acquire({ id: 'a' });
    await again.close(); // the upstream went away
    assert.notEqual(await pool.acquire({ id: 'a' }), again);
    await pool.close();
    await assert.rejects(pool.acquire({ id: 'a' }), /closed/);
  });
});

describe('CallerCredentials', () => {
  it('holds the latest token per principal until it expires', () => {
    let now = 0;
    const callers = new CallerCredentials({ now: () => now });
    callers.remember('alice', { token: 't1', expiresAt: 1_000 });
    callers.remember('alice', { token: 't2', expiresAt: 2_000 });
    assert.equal(callers.current('alice')?.token, 't2');
    now = 2_000;
    assert.equal(callers.current('alice'), undefined);
    assert.equal(callers.size, 0);
  });

  it('drops a token without expiry after idleMs, and the least recently authenticated beyond maxPrincipals', () => {
    let now = 0;
    const forgotten: string[] = [];
    const callers = new CallerCredentials({ now: () => now, idleMs: 100, maxPrincipals: 2 });
    callers.onForget((principal) => forgotten.push(principal));
    callers.remember('a', { token: 'ta' });
    callers.remember('b', { token: 'tb' });
    callers.remember('c', { token: 'tc' });
    assert.deepEqual(forgotten, ['a']);
    assert.equal(callers.size, 2);
    now = 100;
    assert.equal(callers.current('b'), undefined);
    assert.deepEqual(forgotten, ['a', 'b']);
  });

  it('recheck drops tokens the verifier now refuses, keeps those it cannot decide on', async () => {
    const refused = new Set(['revoked']);
    const verifier: TokenVerifier = {
      verify: (token) => {
        if (refused.has(token)) return Promise.reject(new InvalidTokenError('revoked'));
        if (token === 'undecided') return Promise.reject(new Error('identity provider down'));
        return Promise.resolve({ principal: { id: token } });
      },
    };
    const callers = new CallerCredentials();
    callers.remember('a', { token: 'revoked' });
    callers.remember('b', { token: 'fine' });
    callers.remember('c', { token: 'undecided' });
    await callers.recheck(verifier);
    assert.equal(callers.current('a'), undefined);
    assert.equal(callers.current('b')?.token, 'fine');
    assert.equal(callers.current('c')?.token, 'undecided');
  });

  it('passthrough reads the current token on every request through one provider per principal', async () => {
    const callers = new CallerCredentials();
    const source = new PassthroughCredentials(callers);
    await assert.rejects(source.connectionAuth('up', { id: 'alice' }), UpstreamAuthorizationRequiredError);
    callers.remember('alice', { token: 'one' });
    const first = await source.connectionAuth('up', { id: 'alice' });
    callers.remember('alice', { token: 'two' });
    const second = await source.connectionAuth('up', { id: 'alice' });
    assert.equal(first.authProvider, second.authProvider, 'the same provider: the pool keeps the connection');
    assert.equal(await (first.authProvider as AuthProvider).token(), 'two');
    callers.forget('alice');
    assert.equal(await (first.authProvider as AuthProvider).token(), undefined, 'a forgotten token is never sent');
  });
});
