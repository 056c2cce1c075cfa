/**
 * The floor of cold start for any server on the v2 SDK: a bare
 * `McpServer` with one zod tool on the SDK's stdio transport, in plain
 * JavaScript (no tsx, as the built package runs). bench/coldStart.ts times
 * its answer to `initialize` next to taskvisor's.
 */
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

const server = new McpServer({ name: 'bare', version: '1' });
server.registerTool('echo', { inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
  content: [{ type: 'text', text }],
}));
await server.connect(new StdioServerTransport());
