/**
 * `taskvisor token add --file FILE --principal ID [--scope S]...`: adds a
 * fresh random bearer token for a principal to a token file (created with
 * mode 0600; only the token's SHA-256 digest is stored) and prints the token
 * once on stdout.
 */
import { parseArgs } from 'node:util';
import { addTokenToFile, TokenFileError } from '../auth/tokenFile.js';
import { ConfigError } from '../config/loadConfig.js';

const USAGE = `Usage: taskvisor token add --file FILE --principal ID [--scope SCOPE]...

Adds a new random token (256 bits) for principal ID to the token file FILE
(created with mode 0600 if missing; a file others can read is refused). Only
the token's SHA-256 digest is written; the token is printed once on stdout.
Send SIGHUP to a running 'taskvisor serve' to load it without a restart.
`;

export async function tokenCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === 'help' || sub === '--help') {
    process.stdout.write(USAGE);
    return sub === undefined ? 2 : 0;
  }
  if (sub !== 'add') throw new ConfigError(`token ${sub}: unknown subcommand (expected: add)`);
  const { values } = parseArgs({
    args: rest,
    options: { file: { type: 'string' }, principal: { type: 'string' }, scope: { type: 'string', multiple: true } },
    strict: true,
    allowPositionals: false,
  });
  if (!values.file) throw new ConfigError('token add: --file FILE is required');
  if (!values.principal) throw new ConfigError('token add: --principal ID is required');
  try {
    const token = await addTokenToFile(values.file, values.principal, { ...(values.scope ? { scopes: values.scope } : {}) });
    process.stdout.write(`${token}\n`);
    process.stderr.write(`taskvisor: added a token for ${values.principal} to ${values.file} (shown once; only its digest is stored)\n`);
    return 0;
  } catch (error) {
    if (error instanceof TokenFileError) throw new ConfigError(error.message);
    throw error;
  }
}
