/**
 * How upstream resource URIs are named downstream: the upstream's URI behind
 * a scheme prefix of its own, `<namespace>-<prefix>+<uri>`
 * (`test://static/resource/1` of upstream `everything` →
 * `x-everything+test://static/resource/1`). Reversible by construction: the
 * namespace has no `-`, the prefix has no `+`, so the first `+` ends the
 * prefix and everything after it is the upstream's URI, unchanged. The result
 * is still an absolute URI (`x-everything+test` is a valid scheme, RFC 3986
 * §3.1) and a URI template stays a template (the prefix is a literal).
 */

/** The downstream prefix of one upstream's resource URIs. */
export function upstreamResourcePrefix(namespace: string, prefix: string): string {
  return `${namespace}-${prefix}+`;
}

/** The downstream URI (or URI template) of an upstream's `uri`. */
export function forwardedResourceUri(namespace: string, prefix: string, uri: string): string {
  return `${upstreamResourcePrefix(namespace, prefix)}${uri}`;
}

/** The upstream's own URI behind a downstream one; `undefined` when `uri` is not of this upstream. */
export function upstreamResourceUri(resourcePrefix: string, uri: string): string | undefined {
  return uri.startsWith(resourcePrefix) ? uri.slice(resourcePrefix.length) : undefined;
}
