/**
 * `upstreams[].identity` in the config file: refused with the file, line,
 * column and field when it cannot work (acting as the caller without bearer
 * auth, on a stdio upstream, a token exchange without a named secret or with
 * an inline one), and the exchange's client secret is read from its
 * environment variable or file, never echoed — through the real CLI.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig, parseConfig } from '../../src/config/loadConfig.js';
import { upstreamsOf } from '../../src/upstreams/fromConfig.js';
import { CLI, runNode, tempDir } from '../support/processes.js';

let dir: Awaited<ReturnType<typeof tempDir>>;
before(async () => {
  dir = await tempDir('taskvisor-identity-config-');
});
after(async () => {
  await dir?.remove();
});

const AUTH = 'auth:\n  kind: jwt\n  jwksUrl: https://idp.example.com/jwks.json\n  issuer: https://idp.example.com/\n  audience: tv\n';
const upstream = (identity: string, type = 'type: streamable-http\n    url: https://tools.example.com/mcp') =>
  `upstreams:\n  - name: remote\n    ${type}\n    identity:${identity}\n`;
const EXCHANGE = (secret: string) =>
  `\n      mode: tokenExchange\n      tokenEndpoint: https://idp.example.com/token\n      audience: tools-api\n      clientId: taskvisor\n${secret}`;

const refusal = (text: string): string => {
  try {
    parseConfig(text, 'tv.yaml');
  } catch (error) {
    return (error as Error).message;
  }
  return assert.fail('the config was accepted');
};

describe('upstreams[].identity at config load', () => {
  it('static and passthrough (with bearer auth) load; the string form and the object form are the same', () => {
    const config = parseConfig(AUTH + upstream(' passthrough'), 'tv.yaml');
    assert.deepEqual(config.upstreams?.[0]?.identity, { mode: 'passthrough' });
    assert.deepEqual(parseConfig(upstream('\n      mode: static'), 'tv.yaml').upstreams?.[0]?.identity, { mode: 'static' });
  });

  it('passthrough without bearer auth: refused at the identity field, saying why', () => {
    assert.match(
      refusal(upstream(' passthrough')),
      /^tv\.yaml:5:15: upstreams\[0\]\.identity: identity passthrough forwards the caller's bearer token, but no bearer authentication is configured \(auth: token-file or jwt\)$/,
    );
    assert.match(refusal('auth:\n  kind: none\n' + upstream(' passthrough')), /no bearer authentication is configured/);
  });

  it('a stdio upstream cannot act as each caller', () => {
    assert.match(
      refusal(AUTH + upstream(' passthrough', 'type: stdio\n    command: node')),
      /upstreams\[0\]\.identity: identity passthrough needs type: streamable-http/,
    );
  });

  it('callers’ tokens never go to a plain-http upstream off loopback', () => {
    assert.match(
      refusal(AUTH + upstream(' passthrough', 'type: streamable-http\n    url: http://tools.example.com/mcp')),
      /upstreams\[0\]\.url: identity passthrough sends callers' tokens to this upstream: use https:\/\//,
    );
    assert.doesNotThrow(() =>
      parseConfig(AUTH + upstream(' passthrough', 'type: streamable-http\n    url: http://127.0.0.1:9/mcp'), 'tv.yaml'),
    );
  });

  it('an unknown mode names the choices', () => {
    assert.match(
      refusal(AUTH + upstream(' impersonate')),
      /upstreams\[0\]\.identity\.mode: expected static, passthrough, oauth, or \{ mode: tokenExchange/,
    );
  });

  it('oauth needs the credentials section (not bearer auth), exactly one key source, and a safe callback URL', () => {
    assert.match(
      refusal(upstream(' oauth')),
      /tv\.yaml:5:15: upstreams\[0\]\.identity: mode oauth needs the top-level credentials section/,
    );
    assert.doesNotThrow(
      () => parseConfig(`credentials: { keyEnv: TV_KEY }\n${upstream(' oauth')}`, 'tv.yaml'),
      'stdio principals may hold grants',
    );
    assert.match(
      refusal(`credentials: { keyEnv: TV_KEY, keyFile: k }\n${upstream(' oauth')}`),
      /credentials\.keyEnv: give exactly one of keyEnv or keyFile/,
    );
    assert.match(
      refusal(`credentials: { keyEnv: TV_KEY, callbackUrl: "http://gateway.example.com/cb" }\n${upstream(' oauth')}`),
      /credentials\.callbackUrl: use https:\/\/ \(http:\/\/ only on a loopback address\)/,
    );
    assert.match(
      refusal(`credentials: { keyEnv: TV_KEY }\n${upstream(' oauth', 'type: streamable-http\n    url: http://tools.example.com/mcp')}`),
      /upstreams\[0\]\.url: identity oauth sends each principal’s OAuth tokens to this upstream: use https:\/\//,
    );
  });

  it('a token exchange needs exactly one named secret; an inline secret is an unknown field', () => {
    assert.match(
      refusal(AUTH + upstream(EXCHANGE(''))),
      /identity\.clientSecretEnv: give exactly one of clientSecretEnv or clientSecretFile/,
    );
    const inline = refusal(AUTH + upstream(EXCHANGE('      clientSecret: hunter2\n')));
    assert.match(inline, /identity\.clientSecret: unknown field/);
    assert.doesNotMatch(inline, /hunter2/);
  });

  it('the token endpoint must be https (http only on loopback): the exchange sends the caller’s token', () => {
    const text =
      AUTH +
      upstream(EXCHANGE('      clientSecretEnv: TV_SECRET\n').replace('https://idp.example.com/token', 'http://idp.example.com/token'));
    assert.match(refusal(text), /identity\.tokenEndpoint: use https:\/\//);
  });

  it('the secret is read from its file (trimmed) or environment variable', async () => {
    const file = join(dir.path, 'from-file.yaml');
    await writeFile(join(dir.path, 'exchange.secret'), 'from-the-file\n', { mode: 0o600 });
    await writeFile(file, AUTH + upstream(EXCHANGE('      clientSecretFile: exchange.secret\n')));
    const [spec] = upstreamsOf(await loadConfig(file));
    assert.deepEqual(spec!.identity, {
      mode: 'tokenExchange',
      tokenEndpoint: 'https://idp.example.com/token',
      audience: 'tools-api',
      clientId: 'taskvisor',
      clientSecret: 'from-the-file',
    });
  });

  it('serve refuses an unset secret variable with the field named, before listening (CLI)', async () => {
    const file = join(dir.path, 'unset.yaml');
    await writeFile(file, AUTH + upstream(EXCHANGE('      clientSecretEnv: TV_IDENTITY_TEST_UNSET\n')));
    const env = { ...process.env };
    delete env.TV_IDENTITY_TEST_UNSET;
    const { code, stderr } = await runNode([CLI, 'serve', '--config', file, '--http', '127.0.0.1:0'], { cwd: dir.path, env });
    assert.equal(code, 1, stderr);
    assert.match(
      stderr,
      /unset\.yaml:\d+:\d+: upstreams\[0\]\.identity\.clientSecretEnv: the environment variable TV_IDENTITY_TEST_UNSET is not set or empty/,
    );
    assert.doesNotMatch(stderr, /serving MCP|\n\s+at /);
  });
});
