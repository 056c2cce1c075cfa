/**
 * Domain errors to the SDK's error types, at the wire boundary. The runtime
 * throws `TaskvisorError`s (src/core/errors.ts) and never an SDK type; every
 * request handler this layer registers passes its failures through
 * {@link toProtocolError}, so a client sees the same `{code, message, data}`
 * and SDK-side code (`instanceof ProtocolError`) sees an SDK error.
 *
 * Anything else — a store that cannot read a file, a database that refused a
 * connection, a bug — is a server fault whose message names what the client
 * must not see: absolute store paths, the PostgreSQL URL with its user name,
 * bytes of a corrupt record. The client gets a stable
 * `-32603 Internal error (ref <id>)` and the detail goes to the log under
 * the same id.
 */
import { randomUUID } from 'node:crypto';
import { MissingRequiredClientCapabilityError, ProtocolError } from '@modelcontextprotocol/server';
import { ErrorCode, MissingTasksCapabilityError, TaskvisorError } from '../core/errors.js';
import type { Logger } from '../runtime/Logger.js';

/** The SDK error for a domain error; an SDK error unchanged; anything else the stable internal error (detail logged). */
export function toProtocolError(error: unknown, logger?: Logger): unknown {
  if (error instanceof MissingTasksCapabilityError) return new MissingRequiredClientCapabilityError(error.data, error.message);
  if (error instanceof TaskvisorError) return new ProtocolError(error.code, error.message, error.data);
  if (error instanceof ProtocolError) return error;
  // A deliberate JSON-RPC error (a ToolError, an SDK error of another copy): integer code, meant for the client.
  if (error instanceof Error && Number.isInteger((error as { code?: unknown }).code)) {
    const coded = error as Error & { code: number; data?: unknown };
    return new ProtocolError(coded.code, coded.message, coded.data);
  }
  return internalError(error, logger);
}

/** The stable error a client gets for a server fault; `error` itself goes to `logger` (stderr by default) under a reference id. */
export function internalError(error: unknown, logger?: Logger): ProtocolError {
  const ref = randomUUID().slice(0, 8);
  if (logger) logger.error(`request failed (ref ${ref})`, error);
  else process.stderr.write(`taskvisor: error: request failed (ref ${ref}): ${error instanceof Error ? error.message : String(error)}\n`);
  return new ProtocolError(ErrorCode.InternalError, `Internal error: the server could not complete the request (ref ${ref})`, { ref });
}

/** `handler`, with its domain errors mapped by {@link toProtocolError}. */
export function mappingErrors<Args extends unknown[], Result>(
  handler: (...args: Args) => Promise<Result>,
  logger?: Logger,
): (...args: Args) => Promise<Result> {
  return async (...args) => {
    try {
      return await handler(...args);
    } catch (error) {
      throw toProtocolError(error, logger);
    }
  };
}
