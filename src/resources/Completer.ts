/**
 * Argument completion (`completion/complete`): a prompt argument or a
 * resource template variable may carry a completer that suggests values for
 * what the user typed so far.
 */

/** What a completer is told besides the partial value. */
export interface CompletionContext {
  /** Values already given to the other arguments (or variables) of the same prompt or template. */
  arguments: Record<string, string>;
  principal: string;
}

/** Suggests values starting from `value`; at most 100 are sent (the client is told when there were more). */
export type Completer = (value: string, context: CompletionContext) => Promise<string[]> | string[];

/** Most values one `completion/complete` answer carries (MCP: "max 100 items"). */
export const MAX_COMPLETION_VALUES = 100;
