/**
 * Upstream `headers` are checked when the config is loaded, through the real
 * CLI: a value fetch cannot send (a character past U+00FF, a control
 * character) or a name that is not an HTTP token is refused with the file,
 * line, column and header named — and the value itself never printed, since
 * it is usually a secret. The example in docs/aggregator.md loads as written,
 * and the refusal it shows is the one the CLI gives.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/loadConfig.js';
import { CLI, REPO_ROOT, runNode, tempDir } from '../support/processes.js';

let dir: Awaited<ReturnType<typeof tempDir>>;
before(async () => {
  dir = await tempDir('taskvisor-upstream-headers-');
});
after(async () => {
  await dir?.remove();
});

const upstream = (headers: string) =>
  `upstreams:\n  - name: remote\n    type: streamable-http\n    url: https://tools.example.com/mcp\n    headers:\n${headers}`;

/** Runs `serve` on `content` and returns stderr after checking it was a clean refusal. */
async function refuse(name: string, content: string): Promise<string> {
  const file = join(dir.path, name);
  await writeFile(file, content);
  const { code, stdout, stderr } = await runNode([CLI, 'serve', '--config', file, '--http', '127.0.0.1:0'], { cwd: dir.path });
  assert.equal(code, 1, `exit code: ${stderr}`);
  assert.equal(stdout, '');
  assert.doesNotMatch(stderr, /serving MCP/);
  assert.doesNotMatch(stderr, /\n\s+at /, `a stack trace instead of a message: ${stderr}`);
  return stderr;
}

/** The first ```yaml block of docs/aggregator.md. */
async function docExample(): Promise<string> {
  const doc = await readFile(join(REPO_ROOT, 'docs', 'aggregator.md'), 'utf8');
  const block = /```yaml\n([\s\S]*?)```/.exec(doc);
  assert.ok(block, 'docs/aggregator.md has a yaml block');
  return block[1]!;
}

describe('upstream headers are checked at config load (CLI)', () => {
  it('a non-Latin-1 character in a value: refused with file:line:col and the header, the value not echoed', async () => {
    const stderr = await refuse('ellipsis.yaml', upstream('      Authorization: Bearer s3cr3t…\n'));
    assert.match(
      stderr,
      /ellipsis\.yaml:6:22: upstreams\[0\]\.headers\.Authorization: the value cannot be sent as an HTTP header: it has U\+2026 at index 13, a character outside Latin-1 \(the value is not shown\)/,
    );
    assert.doesNotMatch(stderr, /s3cr3t/);
  });

  it('control characters (CR, LF, NUL, DEL) in a value are refused; the value is not echoed', async () => {
    const stderr = await refuse(
      'control.yaml',
      upstream(
        '      X-One: "tok1\\r\\nX-Injected: yes"\n      X-Two: "tok2\\u0000"\n      X-Three: "tok3\\u007f"\n      X-Tab: "a\\tb"\n',
      ),
    );
    assert.match(stderr, /control\.yaml:6:14: upstreams\[0\]\.headers\.X-One: .* U\+000D at index 4, a control character/);
    assert.match(stderr, /control\.yaml:7:14: upstreams\[0\]\.headers\.X-Two: .* U\+0000 at index 4, a control character/);
    assert.match(stderr, /control\.yaml:8:16: upstreams\[0\]\.headers\.X-Three: .* U\+007F at index 4, a control character/);
    // HTAB is allowed inside a field value (RFC 9110 §5.5).
    assert.doesNotMatch(stderr, /X-Tab/);
    assert.doesNotMatch(stderr, /tok1|tok2|tok3|Injected/);
  });

  it('a header name that is not an HTTP token is refused', async () => {
    const stderr = await refuse('name.yaml', upstream('      "X Bad: name": v\n      "Ünicode": v\n'));
    assert.match(stderr, /name\.yaml:6:22: upstreams\[0\]\.headers\.X Bad: name: not a valid HTTP header name/);
    assert.match(stderr, /name\.yaml:7:18: upstreams\[0\]\.headers\.Ünicode: not a valid HTTP header name/);
  });

  it("docs/aggregator.md's example loads as written, and the refusal it shows is the CLI's", async () => {
    const example = await docExample();
    assert.match(example, /Authorization: "Bearer REPLACE_WITH_YOUR_TOKEN"/);
    const config = parseConfig(example, 'taskvisor.yaml');
    const remote = config.upstreams?.find((entry) => entry.name === 'remote');
    assert.ok(remote && remote.type === 'streamable-http');
    assert.deepEqual(remote.headers, { Authorization: 'Bearer REPLACE_WITH_YOUR_TOKEN' });
    // The same file with a pasted `…` in place of the token: the message the page shows.
    const pasted = example.replace('"Bearer REPLACE_WITH_YOUR_TOKEN"', 'Bearer …');
    await writeFile(join(dir.path, 'taskvisor.yaml'), pasted);
    const { code, stderr } = await runNode([CLI, 'serve', '--config', 'taskvisor.yaml', '--http', '127.0.0.1:0'], { cwd: dir.path });
    assert.equal(code, 1, stderr);
    const shown = /```text\n(taskvisor\.yaml:\d+:\d+: upstreams\[1\]\.headers\.Authorization: [^\n]+)\n```/.exec(
      await readFile(join(REPO_ROOT, 'docs', 'aggregator.md'), 'utf8'),
    );
    assert.ok(shown, 'docs/aggregator.md shows the refusal');
    assert.ok(stderr.includes(shown[1]!), `the CLI says:\n${stderr}\nthe page says:\n${shown[1]}`);
  });
});
