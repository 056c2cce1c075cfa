/**
 * Embedding taskvisor in an existing Node HTTP service: the MCP endpoint is
 * mounted at /mcp next to the service's own routes.
 *
 *   PORT=8080 npx tsx examples/embed/server.ts
 */
import http from 'node:http';
import { z } from 'zod';
import { createHttpEntry } from '../../src/transports/index.js';
import { createRuntime } from '../../src/index.js';

const runtime = createRuntime({ store: { kind: 'lowdb', dir: './.taskvisor-embed' } });
runtime.tool('slow_add', { inputSchema: z.object({ a: z.number(), b: z.number() }) }, async ({ a, b }, ctx) => {
  ctx.setStatus('Adding slowly');
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return `${a + b}`;
});
await runtime.start();
const mcp = createHttpEntry(runtime, { path: '/mcp' });

const server = http.createServer((req, res) => {
  if (mcp.handleNode(req, res)) return; // MCP traffic
  res.writeHead(200, { 'content-type': 'text/plain' }).end('the rest of your service\n');
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  console.log(`listening http://127.0.0.1:${port}/mcp`);
});
process.once('SIGTERM', () => void runtime.close().then(() => server.close()));
