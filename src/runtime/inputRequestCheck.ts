/**
 * Which input requests a run may issue: only the methods MCP defines, and
 * only kinds the client declared on the originating call, down to members
 * like `elicitation.url` (T-19, D-10).
 */
import type { InputRequest } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import { ErrorCode, ToolError } from '../core/errors.js';
import { missingCapabilities, requiredCapabilitiesFor } from '../core/inputCapabilities.js';

const CAPABILITY_OF: Record<InputRequest['method'], string> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

/** Why `request` may not be issued to a client that declared `clientCapabilities`; `undefined` when it may. */
export function refusedInputRequest(request: InputRequest, clientCapabilities: JsonObject | undefined): Error | undefined {
  if (!CAPABILITY_OF[request.method]) return new TypeError(`Unsupported input request method ${JSON.stringify(request.method)}`);
  const missing = clientCapabilities && missingCapabilities(requiredCapabilitiesFor(request), clientCapabilities);
  if (!missing) return undefined;
  return new ToolError(
    ErrorCode.MissingRequiredClientCapability,
    `The client did not declare the ${describeCapabilities(missing)} capability`,
    {
      requiredCapabilities: missing,
    },
  );
}

/** `{elicitation: {url: {}}}` as "elicitation.url", for error messages. */
function describeCapabilities(capabilities: Record<string, JsonObject>): string {
  return Object.entries(capabilities)
    .flatMap(([name, members]) => (Object.keys(members).length > 0 ? Object.keys(members).map((member) => `${name}.${member}`) : [name]))
    .join(', ');
}
