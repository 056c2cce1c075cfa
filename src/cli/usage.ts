/**
 * What every `taskvisor` command shares about its command line:
 * `--help`/`-h` (and a `help` subcommand) print the command's usage on stdout
 * and exit 0; a command line that cannot be understood (unknown command,
 * subcommand or option, a missing argument or required option) is a
 * {@link UsageError}, which `main` reports on stderr with the usage and exit
 * code 2. A value that is understood but refused (a bad config, an address
 * that does not parse, a port in use) stays a `ConfigError`: exit 1.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** The command line could not be understood; exit code 2. */
export class UsageError extends Error {
  /**
   * @param message what was wrong, e.g. `unknown subcommand "draw"; valid subcommands: list, export`
   * @param usage the usage text of the command it concerns, printed after the message
   */
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Exit code of a usage error (docs/configuration.md). */
export const USAGE_EXIT_CODE = 2;

/** Where a command writes; tests pass their own. */
export interface CliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

const HELP = { help: { type: 'boolean', short: 'h' } } as const;

/**
 * `parseArgs` in strict mode with `--help`/`-h` added to `options`; its errors
 * (unknown option, missing value, unexpected positional) become
 * {@link UsageError}s carrying `usage`. When `help` is set, the caller prints
 * `usage` and exits 0.
 */
export function parseCommandLine<const O extends OptionsConfig>(
  args: string[],
  options: O,
  usage: string,
  { positionals = false }: { positionals?: boolean } = {},
): ReturnType<typeof parseArgs<{ args: string[]; options: O & typeof HELP; strict: true; allowPositionals: boolean }>> {
  try {
    return parseArgs({ args, options: { ...options, ...HELP }, strict: true, allowPositionals: positionals });
  } catch (error) {
    throw new UsageError((error as Error).message, usage);
  }
}

/** Whether `word` asks for help in the place of a subcommand: `help`, `--help` or `-h`. */
export function isHelpWord(word: string | undefined): boolean {
  return word === 'help' || word === '--help' || word === '-h';
}
