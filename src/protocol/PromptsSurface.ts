/**
 * `prompts/list` and `prompts/get` on one SDK server instance, from the
 * runtime's `PromptRegistry` (local prompts and the aggregator's forwarded
 * ones). A missing required argument is `-32602` before the handler runs.
 */
import { ProtocolError, type Server } from '@modelcontextprotocol/server';
import { clipClientText } from '../core/clientText.js';
import { ErrorCode } from '../core/errors.js';
import type { Logger } from '../runtime/Logger.js';
import type { PromptResult } from '../prompts/PromptDefinition.js';
import type { PromptRegistry } from '../prompts/PromptRegistry.js';
import { mappingErrors } from './errors.js';
import { sdkPromptResult, sdkPrompts } from './sdkShapes.js';

export interface PromptsSurfaceOptions {
  prompts: PromptRegistry;
  principal: string;
  logger?: Logger;
}

export const PromptsSurface = {
  attach(server: Server, { prompts, principal, logger }: PromptsSurfaceOptions): void {
    // The domain's JSON named as the SDK's types: sdkShapes.ts says why that is an assertion, not a conversion.
    server.setRequestHandler('prompts/list', () => ({ prompts: sdkPrompts(prompts.list()) }));
    server.setRequestHandler(
      'prompts/get',
      mappingErrors(async (request, ctx) => {
        const { name } = request.params;
        const args = request.params.arguments ?? {};
        const context = { principal, signal: ctx.mcpReq.signal };
        const forwarded = prompts.getForwarded(name);
        if (forwarded) return sdkPromptResult(await forwarded.get(args, context));
        const prompt = prompts.get(name);
        if (!prompt) throw new ProtocolError(ErrorCode.InvalidParams, `Unknown prompt: ${clipClientText(name)}`);
        const missing = (prompt.options.arguments ?? []).filter((argument) => argument.required && args[argument.name] === undefined);
        if (missing.length > 0) {
          throw new ProtocolError(
            ErrorCode.InvalidParams,
            `Invalid arguments for prompt ${name}: missing required argument${missing.length > 1 ? 's' : ''} ${missing.map((a) => a.name).join(', ')}`,
          );
        }
        return sdkPromptResult(normalize(name, await prompt.handler(args, context)));
      }, logger),
    );
  },
};

/** A handler's answer as a `GetPromptResult`; a string is one user text message. */
function normalize(name: string, returned: PromptResult | string): PromptResult {
  if (typeof returned === 'string') return { messages: [{ role: 'user', content: { type: 'text', text: returned } }] };
  const messages = (returned as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages)) {
    throw new ProtocolError(
      ErrorCode.InternalError,
      `Prompt ${name} returned an invalid result: expected a string or an object with a messages array`,
    );
  }
  return returned;
}
