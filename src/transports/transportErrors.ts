/**
 * What the log keeps of an error a transport reports. Such errors are often
 * caused by what a client sent, and their messages quote it: header values
 * (`Mcp-Name`), body fragments in JSON parse errors, tool names. The log
 * must not carry secrets or user data (docs/security.md), and a hostile
 * client must not be able to write what it likes into it, so quoted parts
 * are cut out, the text is bounded, and a request the SDK rejected as
 * malformed — the client's fault, answered on the wire — is one short info
 * line naming only the rule it broke.
 */
import type { Logger } from '../runtime/Logger.js';

const MAX_LOGGED_CHARS = 200;

/** The message of `error` with every quoted part replaced by `"…"`, control characters dropped, bounded. */
export function scrubErrorText(error: unknown): string {
  const text =
    error instanceof Error
      ? `${error.name === 'Error' ? '' : `${error.name}: `}${error.message}`
      : typeof error === 'string'
        ? error
        : 'unknown error';
  const scrubbed = text
    .replace(/"(?:[^"\\]|\\.)*"/g, '"…"')
    .replace(/'(?:[^'\\]|\\.)*'/g, "'…'")
    .replace(/`[^`]*`/g, '`…`')
    .replace(/[\u0000-\u001f\u007f]+/g, ' ');
  return scrubbed.length > MAX_LOGGED_CHARS ? `${scrubbed.slice(0, MAX_LOGGED_CHARS)}…` : scrubbed;
}

const REJECTED = /^Rejected inbound request \(([\w-]+)\)/;

/** Logs an error a transport reported (see the module comment). */
export function logTransportError(logger: Logger, where: string, error: unknown): void {
  const rejected = error instanceof Error ? REJECTED.exec(error.message) : null;
  if (rejected) {
    logger.info(`${where}: rejected a malformed request (${rejected[1]})`);
    return;
  }
  logger.error(where, scrubErrorText(error));
}
