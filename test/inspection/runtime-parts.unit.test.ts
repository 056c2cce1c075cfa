/**
 * The task runtime stays in parts a newcomer can name:
 * registry, actor factory, recovery, reaper, and a supervisor that routes,
 * each small; and a task's status is only ever the machine's (I-3): nothing
 * in the runtime writes one by hand.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';

const runtimeDir = new URL('../../src/runtime/', import.meta.url);
const MAX_LINES = 250;

async function runtimeFiles(): Promise<Array<{ name: string; text: string }>> {
  const names = (await readdir(runtimeDir)).filter((name) => name.endsWith('.ts'));
  return Promise.all(names.map(async (name) => ({ name, text: await readFile(new URL(name, runtimeDir), 'utf8') })));
}

describe('src/runtime', () => {
  it("keeps the supervisor's jobs in their own files", async () => {
    const names = (await runtimeFiles()).map((file) => file.name);
    for (const part of [
      'TaskSupervisor.ts',
      'TaskRegistry.ts',
      'TaskActorFactory.ts',
      'TaskRecovery.ts',
      'TaskReaper.ts',
      'AdmissionSlots.ts',
      'Persister.ts',
    ])
      assert.ok(names.includes(part), part);
  });

  it(`keeps each task part under ${MAX_LINES} lines`, async () => {
    for (const { name, text } of await runtimeFiles()) {
      if (!name.startsWith('Task')) continue;
      const lines = text.split('\n').length;
      assert.ok(lines <= MAX_LINES, `${name} has ${lines} lines`);
    }
  });

  it('never writes a task status by hand: statuses come from the machine (I-3)', async () => {
    const byHand = /\bstatus:\s*'(working|input_required|completed|failed|cancelled)'/;
    for (const { name, text } of await runtimeFiles()) assert.doesNotMatch(text, byHand, name);
  });
});
