/**
 * The catalog served over stdio through the runtime API (`runtime.use`),
 * for hosts that spawn their servers: `npx tsx examples/resources-and-prompts/stdio.ts`.
 * Nothing but protocol goes to stdout.
 */
import { createRuntime } from '../../src/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { serveStdio } from '../../src/transports/index.js';
import catalog from './catalog.js';

const runtime = createRuntime({ store: new MemoryTaskStore() });
runtime.use(...catalog);
// Registering after start is fine: connected clients hear notifications/prompts/list_changed.
await runtime.start();
const { closed } = serveStdio(runtime);
if (process.env.ADD_PROMPT_AFTER_MS) {
  setTimeout(
    () => runtime.prompt('late', { description: 'Registered after start' }, () => 'late prompt'),
    Number(process.env.ADD_PROMPT_AFTER_MS),
  );
}
await closed;
await runtime.close();
