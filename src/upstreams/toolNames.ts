/**
 * How upstream tools are named downstream: `<namespace>_<prefix>_<tool>`
 * (default namespace `x`, prefix = the upstream's `toolPrefix` or name). A
 * tool whose name already starts with `<prefix>_` is not prefixed twice
 * (`github_search` of upstream `github` → `x_github_search`). The whole
 * `<namespace>_` space is reserved in the registry for upstream tools.
 */

export const DEFAULT_TOOL_NAMESPACE = 'x';

/** Namespaces and prefixes: lowercase-led identifiers that stay readable inside a tool name. */
export const TOOL_NAMESPACE_PATTERN = /^[A-Za-z][A-Za-z0-9]{0,15}$/;
export const TOOL_PREFIX_PATTERN = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;

export function forwardedToolName(namespace: string, prefix: string, tool: string): string {
  return tool.startsWith(`${prefix}_`) ? `${namespace}_${tool}` : `${namespace}_${prefix}_${tool}`;
}

/** The registry prefix all of one upstream's tools share. */
export function upstreamToolPrefix(namespace: string, prefix: string): string {
  return `${namespace}_${prefix}_`;
}
