/**
 * A consistent command line: every command and subcommand of
 * `taskvisor` answers `--help`, `-h` (and `help` in the place of a
 * subcommand) with its usage on stdout and exit 0; a command line that cannot
 * be understood exits 2 with the message and the usage on stderr. Walked
 * in process over COMMAND_TREE, then a few through the real executable.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COMMAND_TREE, main } from '../../src/cli/main.js';
import { CLI, runNode } from '../support/processes.js';

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return { code, stdout, stderr };
}

const invocations = Object.entries(COMMAND_TREE).flatMap(([command, subcommands]) => [
  [command],
  ...subcommands.map((subcommand) => [command, subcommand]),
]);

describe('taskvisor --help everywhere', () => {
  it('the top level: help, --help, -h print the usage naming every command; no command is a usage error', async () => {
    for (const word of ['help', '--help', '-h']) {
      const { code, stdout, stderr } = await run([word]);
      assert.equal(code, 0, word);
      assert.equal(stderr, '');
      assert.match(stdout, /^Usage: taskvisor <command>/);
      for (const command of Object.keys(COMMAND_TREE)) assert.match(stdout, new RegExp(`^  ${command} `, 'm'), `${command} is listed`);
    }
    const none = await run([]);
    assert.equal(none.code, 2);
    assert.equal(none.stdout, '');
    assert.match(none.stderr, /^taskvisor: missing command\n\nUsage: taskvisor <command>/);
  });

  for (const words of invocations) {
    const name = `taskvisor ${words.join(' ')}`;
    it(`${name} --help / -h: usage on stdout, exit 0`, async () => {
      for (const help of ['--help', '-h']) {
        const { code, stdout, stderr } = await run([...words, help]);
        assert.equal(code, 0, `${name} ${help}: ${stderr}`);
        assert.equal(stderr, '', `${name} ${help}`);
        assert.match(stdout, new RegExp(`^Usage:\\s+taskvisor ${words[0]}\\b`), `${name} ${help}`);
      }
      if (COMMAND_TREE[words[0]!]!.length > 0 && words.length === 1) {
        const { code, stdout } = await run([...words, 'help']);
        assert.equal(code, 0, `${name} help`);
        assert.match(stdout, /^Usage:/);
      }
    });

    it(`${name} --no-such-option: exit 2, the message and the usage on stderr`, async () => {
      const { code, stdout, stderr } = await run([...words, '--no-such-option']);
      assert.equal(code, 2, `${name}: ${stderr}`);
      assert.equal(stdout, '');
      assert.match(
        stderr,
        words.length === 1 && COMMAND_TREE[words[0]!]!.length > 0
          ? /unknown subcommand "--no-such-option"/
          : /Unknown option '--no-such-option'/,
      );
      assert.match(stderr, /\n\nUsage:/);
    });
  }

  it('a missing or unknown subcommand, a missing required option: exit 2', async () => {
    for (const [argv, message] of [
      [['frobnicate'], /unknown command "frobnicate"/],
      [['machines'], /missing subcommand/],
      [['machines', 'draw'], /unknown subcommand "draw"/],
      [['token'], /missing subcommand/],
      [['token', 'remove'], /unknown subcommand/],
      [['token', 'add', '--file', 'x'], /--principal ID is required/],
      [['tasks'], /missing subcommand/],
      [['tasks', 'drop'], /unknown subcommand "drop"/],
      [['tasks', 'list'], /--config FILE \(it names the store\) or --demo is required/],
      [['workflows'], /missing subcommand/],
      [['workflows', 'lint'], /unknown subcommand "lint"/],
      [['workflows', 'run', '--config', 'x.yaml'], /give exactly one workflow NAME/],
      [['workflows', 'run', 'a', '--config', 'x.yaml', '--arg', 'novalue'], /--arg novalue: expected KEY=VALUE/],
      [['upstreams', '--config', 'a', '--state', 'b'], /give --config or --state, not both/],
      [['serve', 'extra'], /Unexpected argument 'extra'/],
    ] as const) {
      const { code, stdout, stderr } = await run([...argv]);
      assert.equal(code, 2, `${argv.join(' ')}: ${stderr}`);
      assert.equal(stdout, '', argv.join(' '));
      assert.match(stderr, message, argv.join(' '));
      assert.match(stderr, /Usage:/, argv.join(' '));
    }
  });
});

describe('the real executable', () => {
  it('serve --help and upstreams help exit 0; serve --bogus exits 2 naming the option', async () => {
    const [serveHelp, upstreamsHelp, bogus] = await Promise.all([
      runNode([CLI, 'serve', '--help']),
      runNode([CLI, 'upstreams', 'help']),
      runNode([CLI, 'serve', '--bogus']),
    ]);
    assert.equal(serveHelp.code, 0, serveHelp.stderr);
    assert.match(serveHelp.stdout, /^Usage: taskvisor serve/);
    assert.equal(upstreamsHelp.code, 0, upstreamsHelp.stderr);
    assert.match(upstreamsHelp.stdout, /^Usage: taskvisor upstreams/);
    assert.equal(bogus.code, 2, bogus.stderr);
    assert.match(bogus.stderr, /^taskvisor: Unknown option '--bogus'/);
  });
});
