/**
 * A stub upstream for muster's scenarios: a real stdio MCP server (the plain
 * v2 SDK) serving the mock tools a scenario declares under
 * `pre_configuration.mcp_servers[].config.tools`, as muster's own mock does:
 * the first response whose `condition` matches the arguments (else the
 * first), its strings rendered as Go templates over the arguments, an
 * `error:` response as a JSON-RPC error, object results as JSON text.
 *
 *   node --import tsx scripts/muster-scenarios/mockServer.ts MOCK.json
 */
import { readFileSync } from 'node:fs';
import { McpServer, ProtocolError } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { compileGoTemplate } from '../../src/workflows/templates/gotemplate/index.js';

interface MockResponse {
  condition?: Record<string, unknown>;
  response?: unknown;
  error?: string;
  delay?: string;
}
interface MockTool {
  name: string;
  description?: string;
  input_schema?: Record<string, unknown>;
  responses?: MockResponse[];
}

const tools = (JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as { tools?: MockTool[] }).tools ?? [];

/** Renders every string in `value` that holds a template; a string that is one action keeps the action's type. */
function rendered(value: unknown, args: Record<string, unknown>): unknown {
  if (typeof value === 'string') return value.includes('{{') ? compileGoTemplate(value).renderTyped(args) : value;
  if (Array.isArray(value)) return value.map((item) => rendered(item, args));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rendered(v, args)]));
  return value;
}

/** muster's loose equality of a condition value: deep-equal, or the same text. */
const sameValue = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b) || String(a) === String(b);

function withDefaults(tool: MockTool, args: Record<string, unknown>): Record<string, unknown> {
  const properties = (tool.input_schema?.properties ?? {}) as Record<string, { default?: unknown }>;
  const defaults = Object.entries(properties)
    .filter(([, p]) => p && 'default' in p)
    .map(([name, p]) => [name, p.default]);
  return { ...Object.fromEntries(defaults), ...args };
}

function delayMs(delay: string | undefined): number {
  const match = delay ? /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(delay) : null;
  if (!match) return 0;
  return Number(match[1]) * (match[2] === 'ms' ? 1 : match[2] === 's' ? 1000 : 60_000);
}

serveStdio(() => {
  const server = new McpServer({ name: 'muster-scenario-mock', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.server.setRequestHandler('tools/list', () => ({
    tools: tools.map((tool) => ({
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
      // muster's mocks may leave out `type: object`, which MCP requires of an input schema.
      inputSchema: { ...tool.input_schema, type: 'object' as const },
    })),
  }));
  server.server.setRequestHandler('tools/call', async (request) => {
    const tool = tools.find((candidate) => candidate.name === request.params.name);
    if (!tool) throw new ProtocolError(-32602, `Unknown tool: ${request.params.name}`);
    const args = withDefaults(tool, request.params.arguments ?? {});
    const responses = tool.responses ?? [];
    const chosen =
      responses.find((r) => Object.entries(r.condition ?? {}).every(([key, want]) => key in args && sameValue(want, args[key]))) ??
      responses[0];
    if (!chosen) throw new ProtocolError(-32603, `no response configured for tool ${tool.name}`);
    const wait = delayMs(chosen.delay);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (chosen.error !== undefined) throw new ProtocolError(-32603, String(rendered(chosen.error, args)));
    const value = rendered(chosen.response, args);
    const text = value !== null && typeof value === 'object' ? JSON.stringify(value) : value === undefined ? '' : String(value);
    return { content: [{ type: 'text', text }] };
  });
  return server;
});
