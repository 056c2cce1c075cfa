/**
 * Resources, a resource template, a prompt and a tool that reports progress
 * and logs, registered one by one through the runtime API and served over
 * Streamable HTTP:
 *
 *   PORT=3000 npx tsx examples/resources-and-prompts/server.ts
 *
 * Prints `listening <url>`. Registering after start is fine: clients hear
 * `notifications/<list>/list_changed` (a listen stream on 2026-07-28, the
 * connection on 2025-11-25).
 */
import { z } from 'zod';
import { createRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';

const runtime = createRuntime({ name: 'notes', store: new MemoryTaskStore() });
const notes = new Map([
  ['groceries', 'milk, eggs, bread'],
  ['todo', 'write the docs'],
]);

runtime.resource('readme', 'notes://readme', { mimeType: 'text/plain' }, () => 'Notes live at notes://note/{name}.');

runtime.resourceTemplate(
  'note',
  'notes://note/{name}',
  { mimeType: 'text/plain', complete: { name: (value) => [...notes.keys()].filter((name) => name.startsWith(value)) } },
  (uri, { name }) => ({ contents: [{ uri, mimeType: 'text/plain', text: notes.get(String(name)) ?? '(empty)' }] }),
);

runtime.prompt(
  'summarize_note',
  {
    description: 'Summarize one note',
    arguments: [{ name: 'name', required: true, complete: (value) => [...notes.keys()].filter((n) => n.startsWith(value)) }],
  },
  ({ name }) => `Summarize this note in one line: ${notes.get(String(name)) ?? '(empty)'}`,
);

runtime.tool('add_note', { inputSchema: z.object({ name: z.string(), text: z.string() }) }, ({ name, text }, ctx) => {
  ctx.progress(1, 2, 'saving');
  notes.set(name, text);
  ctx.log('info', { added: name });
  ctx.progress(2, 2, 'saved');
  return `added ${name}`;
});

await runtime.start();
const http = await listenHttp(runtime, { port: Number(process.env.PORT ?? 0) });
console.log(`listening ${http.url}`);
process.once('SIGTERM', () => void runtime.close().then(() => process.exit(0)));
