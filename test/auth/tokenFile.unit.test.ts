/**
 * The static token file: format, the permission rule (like ssh: a file group
 * or others can read or write is refused unless allowInsecurePermissions),
 * errors that name the field and never echo a token, digest-only entries,
 * reload, and `addTokenToFile` creating 0600 files.
 */
import assert from 'node:assert/strict';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { addTokenToFile, InvalidTokenError, tokenDigest, tokenFileVerifier, TokenFileError } from '../../src/auth/index.js';
import { writeTokenFile } from '../support/authFixtures.js';
import { tempDir } from '../support/processes.js';

const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef';

describe('token file verifier', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  before(async () => (dir = await tempDir('taskvisor-tokens-')));
  after(async () => dir.remove());

  it('maps plaintext and sha256 entries to principals with their scopes; anything else is InvalidTokenError', async () => {
    const file = await writeTokenFile(join(dir.path, 'ok.yaml'), [
      { principal: 'alice', token: ALICE, scopes: ['tasks'] },
      { principal: 'bob', sha256: tokenDigest(BOB) },
    ]);
    const verifier = await tokenFileVerifier(file);
    assert.equal(verifier.size, 2);
    assert.deepEqual(await verifier.verify(ALICE), { principal: { id: 'alice' }, scopes: ['tasks'] });
    assert.deepEqual(await verifier.verify(BOB), { principal: { id: 'bob' } });
    await assert.rejects(verifier.verify(`${ALICE}x`), InvalidTokenError);
    await assert.rejects(verifier.verify(tokenDigest(BOB)), InvalidTokenError, 'the digest itself is not a token');
  });

  for (const mode of [0o644, 0o640, 0o604, 0o620, 0o660]) {
    it(`refuses a token file with mode ${mode.toString(8)} (group/others have access) and says how to fix it`, async () => {
      const file = await writeTokenFile(join(dir.path, `loose-${mode.toString(8)}.yaml`), [{ principal: 'alice', token: ALICE }], mode);
      await assert.rejects(tokenFileVerifier(file), (error: Error) => {
        assert.ok(error instanceof TokenFileError);
        assert.match(error.message, new RegExp(`mode 0${mode.toString(8)}; group and others must have no access \\(run: chmod 600`));
        assert.ok(error.message.startsWith(file));
        return true;
      });
      // The explicit opt-out accepts it.
      assert.equal((await tokenFileVerifier(file, { allowInsecurePermissions: true })).size, 1);
    });
  }

  it('accepts 0600 and 0400', async () => {
    for (const mode of [0o600, 0o400]) {
      const file = await writeTokenFile(join(dir.path, `strict-${mode.toString(8)}.yaml`), [{ principal: 'alice', token: ALICE }], mode);
      assert.equal((await tokenFileVerifier(file)).size, 1);
    }
  });

  const broken: Array<[string, string, RegExp]> = [
    [
      'short token',
      `tokens:\n  - principal: a\n    token: "short-secret"\n`,
      /tokens\[0\]\.token: a token must have at least 16 characters/,
    ],
    [
      'both token and sha256',
      `tokens:\n  - principal: a\n    token: "${ALICE}"\n    sha256: "${tokenDigest(ALICE)}"\n`,
      /tokens\[0\]: give exactly one of token or sha256/,
    ],
    ['neither', `tokens:\n  - principal: a\n`, /tokens\[0\]: give exactly one of token or sha256/],
    ['bad digest', `tokens:\n  - principal: a\n    sha256: "${ALICE}"\n`, /tokens\[0\]\.sha256: expected the 64 hex digits/],
    ['unknown key', `tokens:\n  - principal: a\n    token: "${ALICE}"\n    secret: "${BOB}"\n`, /tokens\[0\]: unknown field secret/],
    ['no principal', `tokens:\n  - token: "${ALICE}"\n`, /tokens\[0\]\.principal: /],
    [
      'duplicate token',
      `tokens:\n  - principal: a\n    token: "${ALICE}"\n  - principal: b\n    sha256: "${tokenDigest(ALICE)}"\n`,
      /tokens\[1\]: the same token is listed twice/,
    ],
    ['not YAML', `tokens: [\n`, /invalid YAML\/JSON/],
    ['wrong top level', `- principal: a\n`, /\(top level\)/],
  ];
  for (const [what, text, expected] of broken) {
    it(`a broken token file (${what}) is a precise error that never shows a token`, async () => {
      const file = join(dir.path, `broken-${what.replace(/\W+/g, '-')}.yaml`);
      await writeFile(file, text, { mode: 0o600 });
      await assert.rejects(tokenFileVerifier(file), (error: Error) => {
        assert.ok(error instanceof TokenFileError, String(error));
        assert.match(error.message, expected);
        assert.ok(!error.message.includes(ALICE) && !error.message.includes(BOB), error.message);
        return true;
      });
    });
  }

  it('reload picks up a rotated file; a broken one keeps the previous tokens in force', async () => {
    const file = await writeTokenFile(join(dir.path, 'rotate.yaml'), [{ principal: 'alice', token: ALICE }]);
    const verifier = await tokenFileVerifier(file);
    await writeTokenFile(file, [{ principal: 'bob', token: BOB }]);
    await verifier.reload();
    assert.deepEqual((await verifier.verify(BOB)).principal, { id: 'bob' });
    await assert.rejects(verifier.verify(ALICE), InvalidTokenError);
    await chmod(file, 0o644);
    await assert.rejects(verifier.reload(), TokenFileError);
    assert.deepEqual((await verifier.verify(BOB)).principal, { id: 'bob' }, 'still in force');
  });

  it('addTokenToFile creates the file with mode 0600, stores only the digest, appends to an existing file', async () => {
    const file = join(dir.path, 'created.yaml');
    const first = await addTokenToFile(file, 'alice', { scopes: ['tasks'] });
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.match(first, /^[A-Za-z0-9_-]{43}$/, '256 bits, base64url');
    const second = await addTokenToFile(file, 'bob');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    const text = await readFile(file, 'utf8');
    assert.ok(!text.includes(first) && !text.includes(second), 'only digests are stored');
    const verifier = await tokenFileVerifier(file);
    assert.deepEqual(await verifier.verify(first), { principal: { id: 'alice' }, scopes: ['tasks'] });
    assert.deepEqual(await verifier.verify(second), { principal: { id: 'bob' } });
    // A loose existing file is refused before it is touched.
    await chmod(file, 0o644);
    await assert.rejects(addTokenToFile(file, 'carol'), TokenFileError);
    assert.equal(await readFile(file, 'utf8'), text);
  });
});
