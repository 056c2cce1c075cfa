/**
 * Domain errors to the SDK's error types, at the wire boundary. The runtime
 * throws `TaskvisorError`s (src/core/errors.ts) and never an SDK type; every
 * request handler this layer registers passes its failures through
 * {@link toProtocolError}, so a client sees the same `{code, message, data}`
 * and SDK-side code (`instanceof ProtocolError`) sees an SDK error.
 */
import { MissingRequiredClientCapabilityError, ProtocolError } from '@modelcontextprotocol/server';
import { MissingTasksCapabilityError, TaskvisorError } from '../core/errors.js';

/** The SDK error for a domain error; anything else unchanged. */
export function toProtocolError(error: unknown): unknown {
  if (error instanceof MissingTasksCapabilityError) return new MissingRequiredClientCapabilityError(error.data, error.message);
  if (error instanceof TaskvisorError) return new ProtocolError(error.code, error.message, error.data);
  return error;
}

/** `handler`, with its domain errors mapped by {@link toProtocolError}. */
export function mappingErrors<Args extends unknown[], Result>(
  handler: (...args: Args) => Promise<Result>,
): (...args: Args) => Promise<Result> {
  return async (...args) => {
    try {
      return await handler(...args);
    } catch (error) {
      throw toProtocolError(error);
    }
  };
}
