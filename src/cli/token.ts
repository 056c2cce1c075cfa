/**
 * `taskvisor token add --file FILE --principal ID [--scope S]...`: adds a
 * fresh random bearer token for a principal to a token file (created with
 * mode 0600; only the token's SHA-256 digest is stored) and prints the token
 * once on stdout.
 */
import { addTokenToFile, TokenFileError } from '../auth/tokenFile.js';
import { ConfigError } from '../config/loadConfig.js';
import { isHelpWord, parseCommandLine, UsageError, type CliIo } from './usage.js';

const USAGE = `Usage: taskvisor token add --file FILE --principal ID [--scope SCOPE]...

Adds a new random token (256 bits) for principal ID to the token file FILE
(created with mode 0600 if missing; a file others can read is refused). Only
the token's SHA-256 digest is written; the token is printed once on stdout.
Send SIGHUP to a running 'taskvisor serve' to load it without a restart.
`;

export async function tokenCommand(argv: string[], io: CliIo = process): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined) throw new UsageError('token: missing subcommand (expected: add)', USAGE);
  if (isHelpWord(sub)) {
    io.stdout.write(USAGE);
    return 0;
  }
  if (sub !== 'add') throw new UsageError(`token: unknown subcommand ${JSON.stringify(sub)}; valid subcommands: add`, USAGE);
  const { values } = parseCommandLine(
    rest,
    { file: { type: 'string' }, principal: { type: 'string' }, scope: { type: 'string', multiple: true } },
    USAGE,
  );
  if (values.help) {
    io.stdout.write(USAGE);
    return 0;
  }
  if (!values.file) throw new UsageError('token add: --file FILE is required', USAGE);
  if (!values.principal) throw new UsageError('token add: --principal ID is required', USAGE);
  try {
    const token = await addTokenToFile(values.file, values.principal, { ...(values.scope ? { scopes: values.scope } : {}) });
    io.stdout.write(`${token}\n`);
    io.stderr.write(`taskvisor: added a token for ${values.principal} to ${values.file} (shown once; only its digest is stored)\n`);
    return 0;
  } catch (error) {
    if (error instanceof TokenFileError) throw new ConfigError(error.message);
    throw error;
  }
}
