/**
 * Why `taskvisor call|tools|tasks` could not connect, said the way a user
 * reads it: what happened first (connection refused at host:port, HTTP 404
 * at this path, not an MCP endpoint, the stdio server exited), then the
 * client library's own message as the detail. The SDK only reports its
 * version negotiation failing; an HTTP endpoint is probed once more here to
 * tell which of those it was.
 */

/** What a failed connection to `url` was: a sentence, or undefined when it is an MCP server that refused us. */
export async function diagnoseHttp(url: URL, headers: Record<string, string> | undefined): Promise<string | undefined> {
  const where = `${url.hostname}:${url.port || (url.protocol === 'https:' ? '443' : '80')}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'taskvisor-cli-probe', method: 'server/discover', params: {} }),
      signal: AbortSignal.timeout(5000),
    });
  } catch (error) {
    const code = causeCode(error);
    if (code === 'ECONNREFUSED') return `connection refused at ${where} (is the server running?)`;
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `no such host ${url.hostname}`;
    const cause = (error as { cause?: { message?: unknown } }).cause?.message;
    return `cannot reach ${where} (${code ?? (typeof cause === 'string' ? cause : (error as Error).message)})`;
  }
  const text = await response.text().catch(() => '');
  if (response.status === 404) return `HTTP 404 at ${url.pathname}: nothing is served at this path (taskvisor serves MCP at /mcp)`;
  if (response.status === 401 || response.status === 403)
    return `HTTP ${response.status} at ${url.pathname}: the server wants credentials (--header 'Authorization: Bearer …')`;
  if (!speaksJsonRpc(text)) {
    const type = response.headers.get('content-type')?.split(';')[0] ?? 'no content type';
    return `not an MCP endpoint: ${url.pathname} answered HTTP ${response.status} (${type}), not JSON-RPC`;
  }
  return undefined;
}

/** Whether an HTTP body (JSON, or an SSE stream of JSON) carries a JSON-RPC message. */
function speaksJsonRpc(text: string): boolean {
  const candidates = [
    text,
    ...text
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5)),
  ];
  return candidates.some((candidate) => {
    try {
      return (JSON.parse(candidate) as { jsonrpc?: unknown }).jsonrpc === '2.0';
    } catch {
      return false;
    }
  });
}

/** The system error code (ECONNREFUSED, …) somewhere in an error's `cause` chain. */
export function causeCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const { code, cause, errors } = current as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
    if (Array.isArray(errors) && errors.length > 0) current = errors[0];
    else current = cause;
  }
  return undefined;
}

/** The last lines of a stdio server's stderr, indented, for a report. */
export function tailOf(stderr: string, lines = 20): string {
  const kept = stderr.trimEnd().split('\n').slice(-lines);
  return kept.map((line) => `  | ${line}`).join('\n');
}
