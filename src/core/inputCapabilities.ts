/**
 * Which client capabilities an input request needs (T-19, D-10), the same
 * rule as the SDK's MRTR check (`requiredClientCapabilitiesForInputRequest`
 * and `missingClientCapabilities` in @modelcontextprotocol/server 2.4.0,
 * not exported): url-mode elicitation needs `elicitation.url`, form-mode
 * `elicitation.form` (a bare `elicitation: {}` counts as form, its 2025
 * meaning), sampling with `tools`/`toolChoice` needs `sampling.tools`,
 * `roots/list` needs `roots`.
 */
import type { InputRequest } from '../../machines/task/index.js';
import type { JsonObject } from './json.js';

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The capabilities `request` needs, in the `ClientCapabilities` shape. */
export function requiredCapabilitiesFor(request: InputRequest): Record<string, JsonObject> {
  const params = (request as { params?: Record<string, unknown> }).params;
  switch (request.method) {
    case 'elicitation/create':
      return { elicitation: params?.mode === 'url' ? { url: {} } : { form: {} } };
    case 'sampling/createMessage':
      return params?.tools !== undefined || params?.toolChoice !== undefined ? { sampling: { tools: {} } } : { sampling: {} };
    case 'roots/list':
      return { roots: {} };
  }
}

/**
 * The part of `required` that `declared` lacks (for `data.requiredCapabilities`
 * of a -32021), or undefined when everything is declared.
 */
export function missingCapabilities(
  required: Record<string, JsonObject>,
  declared: JsonObject | undefined,
): Record<string, JsonObject> | undefined {
  const missing: Record<string, JsonObject> = {};
  for (const [capability, members] of Object.entries(required)) {
    const value = declared?.[capability];
    if (value === undefined) {
      missing[capability] = members;
      continue;
    }
    if (!isPlainObject(value)) continue;
    const absent: JsonObject = {};
    for (const [member, requirement] of Object.entries(members)) {
      const impliedForm = capability === 'elicitation' && member === 'form' && value.form === undefined && value.url === undefined;
      if (value[member] === undefined && !impliedForm) absent[member] = requirement;
    }
    if (Object.keys(absent).length > 0) missing[capability] = absent;
  }
  return Object.keys(missing).length > 0 ? missing : undefined;
}
