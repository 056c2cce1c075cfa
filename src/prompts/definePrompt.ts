/**
 * Prompts as values, for modules a config file points at:
 * `export default [definePrompt('review', {...}, handler)]`.
 */
import type { PromptDefinition, PromptHandler, PromptOptions } from './PromptDefinition.js';

/** Declares a prompt; register it with `runtime.use(...)` or a config file. */
export function definePrompt(name: string, options: PromptOptions, handler: PromptHandler): PromptDefinition {
  return { kind: 'prompt', name, options, handler };
}
