/**
 * The same runtime served over stdio, for MCP hosts that spawn their servers
 * (Claude Code, Cursor): `{"command": "npx", "args": ["tsx", "examples/embed/stdio.ts"]}`.
 * Nothing but protocol may go to stdout.
 */
import { z } from 'zod';
import { createRuntime } from '../../src/index.js';
import { serveStdio } from '../../src/transports/index.js';

const runtime = createRuntime({ store: { kind: 'lowdb', dir: './.taskvisor-embed' } });
runtime.tool('slow_add', { inputSchema: z.object({ a: z.number(), b: z.number() }) }, async ({ a, b }) => {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return `${a + b}`;
});
await runtime.start();
const { closed } = serveStdio(runtime);
await closed;
await runtime.close();
