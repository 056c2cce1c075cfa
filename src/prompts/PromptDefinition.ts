/**
 * How a user declares a prompt: `runtime.prompt(name, options, handler)`, or
 * the `definePrompt` value a config module exports.
 */
import type { JsonObject } from '../core/json.js';
import type { Completer } from '../resources/Completer.js';

/** One argument of a prompt (all prompt arguments are strings). */
export interface PromptArgument {
  name: string;
  title?: string;
  description?: string;
  /** A `prompts/get` without it is refused with `-32602`. */
  required?: boolean;
  /** Suggests values for `completion/complete` with a `ref/prompt`. */
  complete?: Completer;
}

export interface PromptOptions {
  title?: string;
  description?: string;
  arguments?: PromptArgument[];
  icons?: JsonObject[];
  _meta?: JsonObject;
}

/** One message of a prompt: a `user` or `assistant` turn with one content block. */
export interface PromptMessage {
  role: 'user' | 'assistant';
  content: { type: string; [key: string]: unknown };
}

/** A `GetPromptResult` (without `resultType`: the SDK stamps it). */
export interface PromptResult {
  description?: string;
  messages: PromptMessage[];
  _meta?: JsonObject;
}

/** What a prompt handler gets besides its arguments. */
export interface PromptContext {
  principal: string;
  signal: AbortSignal;
}

/** Builds the prompt: a `PromptResult`, or a string (one `user` text message). */
export type PromptHandler = (args: Record<string, string>, ctx: PromptContext) => Promise<PromptResult | string> | PromptResult | string;

/** A registered prompt. */
export interface PromptDefinition {
  kind: 'prompt';
  name: string;
  options: PromptOptions;
  handler: PromptHandler;
}

/** One `prompts/list` entry. */
export interface ListedPrompt {
  name: string;
  title?: string;
  description?: string;
  arguments?: Array<{ name: string; title?: string; description?: string; required?: boolean }>;
  icons?: JsonObject[];
  _meta?: JsonObject;
}

/** An upstream server's prompt, served under a namespaced name (the aggregator's). */
export interface ForwardedPrompt {
  listed: ListedPrompt;
  get(args: Record<string, string>, ctx: PromptContext): Promise<PromptResult>;
  complete?(
    argument: { name: string; value: string },
    context: Record<string, string>,
  ): Promise<{ values: string[]; total?: number; hasMore?: boolean }>;
}
