/**
 * The request head as a hostile client sends it: the request target and the
 * Host header are judged here, before anything builds a `URL` or a web
 * `Request` from them. Both constructors throw on inputs Node's
 * HTTP parser lets through — `http://[/mcp`, credentials in the Host header
 * or the target — and a throw there would end the process.
 *
 * A head that passes is normalised: the target becomes a plain origin-form
 * path (`/mcp?x=1`), so whatever is built from `http://<Host><target>`
 * afterwards (our entries, the SDK's Node adapter) cannot fail and carries
 * no credentials.
 */
import type { IncomingMessage } from 'node:http';

/** Longest request target accepted; a longer one gets 414 (well under Node's 16 KiB header limit). */
export const MAX_REQUEST_TARGET_CHARS = 8 * 1024;
/** Longest Host header accepted: a DNS name (253) plus `:` and a port. */
export const MAX_HOST_CHARS = 253 + 6;
/** Most of a hostile value that reaches the log (escaped). */
const LOGGED_CHARS = 80;

export type HeadVerdict = { ok: true; target: string; host: string } | { ok: false; status: 400 | 414; reason: string };

/** Visible ASCII only: what RFC 9112 allows in a request target. */
const TARGET_CHARS = /^[\x21-\x7e]+$/;
/** RFC 3986 reg-name / IPv4 (no `@`, no `/`), or an IPv6 literal; then an optional port. */
const HOST_SYNTAX = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=%]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
/**
 * Origin-form targets the WHATWG URL parser leaves as they are: `/`, then
 * letters, digits, `-`, `_`, `~` and single `/` separators. No `.` (dot
 * segments), `%` (escapes), `\` (read as `/`), `?`/`#` or `//` (a network path).
 */
const PLAIN_PATH = /^(?:\/[A-Za-z0-9\-_~]+)*\/?$/;
/** Field values: tab, visible ASCII and obs-text; nothing else may reach `Headers`. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Judges the target and Host of `req` (and that every header value is a
 * legal field value). `ok` carries the origin-form target and the Host to
 * build URLs from; a refusal carries the status and a short reason for the log.
 */
export function judgeRequestHead(req: IncomingMessage): HeadVerdict {
  const raw = req.url ?? '';
  if (raw.length > MAX_REQUEST_TARGET_CHARS) return { ok: false, status: 414, reason: `request target of ${raw.length} chars` };
  const host = req.headers.host;
  if (host === undefined || host === '') return { ok: false, status: 400, reason: 'no Host header' };
  if (!goodHost(host)) return { ok: false, status: 400, reason: `bad Host ${escapeForLog(host)}` };
  const headers = req.headers;
  for (const name in headers) {
    const value = headers[name];
    if (Array.isArray(value)) {
      for (const item of value) if (!FIELD_VALUE.test(item)) return badHeader(name);
    } else if (!FIELD_VALUE.test(value ?? '')) return badHeader(name);
  }
  if (!TARGET_CHARS.test(raw)) return { ok: false, status: 400, reason: `bad target ${escapeForLog(raw)}` };
  // A plain path (no dot segments, escapes, query or backslash) is its own origin form: `new URL` would give it back unchanged.
  if (PLAIN_PATH.test(raw)) return { ok: true, target: raw, host };
  let url: URL;
  if (raw.startsWith('/') && !raw.startsWith('//')) {
    // Origin form, the only form browsers send.
    const parsed = parse(`http://${host}${raw}`);
    if (!parsed) return { ok: false, status: 400, reason: `bad target ${escapeForLog(raw)}` };
    url = parsed;
  } else if (/^https?:\/\//i.test(raw)) {
    // Absolute form (RFC 9112 §3.2.2): accepted only naming the Host it came with, without credentials.
    const parsed = parse(raw);
    if (!parsed || parsed.username !== '' || parsed.password !== '' || parsed.host !== parse(`http://${host}/`)?.host) {
      return { ok: false, status: 400, reason: `bad target ${escapeForLog(raw)}` };
    }
    url = parsed;
  } else {
    // `*`, network-path (`//evil/mcp`) and anything else is not a target this server serves.
    return { ok: false, status: 400, reason: `bad target ${escapeForLog(raw)}` };
  }
  return { ok: true, target: `${url.pathname}${url.search}`, host };
}

const badHeader = (name: string): HeadVerdict => ({ ok: false, status: 400, reason: `bad bytes in header ${escapeForLog(name)}` });

/**
 * Host values already judged good: a client sends the same Host on every
 * request, so the syntax test and the URL parse run once per distinct value.
 * Only good values are kept, at most {@link MAX_KNOWN_HOSTS} (the set is
 * emptied when full): hostile values cost the full check, never memory.
 */
const knownHosts = new Set<string>();
const MAX_KNOWN_HOSTS = 64;

function goodHost(host: string): boolean {
  if (knownHosts.has(host)) return true;
  if (host.length > MAX_HOST_CHARS || !HOST_SYNTAX.test(host) || !parses(`http://${host}/`)) return false;
  if (knownHosts.size >= MAX_KNOWN_HOSTS) knownHosts.clear();
  knownHosts.add(host);
  return true;
}

/**
 * Judges `req` and, when it passes, rewrites `req.url` to the plain path
 * (see the module comment). Returns the refusal, or undefined.
 */
export function normaliseRequestHead(req: IncomingMessage): Extract<HeadVerdict, { ok: false }> | undefined {
  const verdict = judgeRequestHead(req);
  if (!verdict.ok) return verdict;
  req.url = verdict.target;
  return undefined;
}

/** `text` JSON-escaped (no control characters, no raw bytes reach the log), cut to ~80 chars. */
export function escapeForLog(text: string): string {
  const cut = text.length > LOGGED_CHARS ? `${text.slice(0, LOGGED_CHARS)}…` : text;
  return JSON.stringify(cut).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function parse(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

const parses = (text: string): boolean => parse(text) !== undefined;
