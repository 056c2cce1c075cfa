/**
 * A real `taskvisor serve --stdio` child with the limit test tools and the
 * given `limits:` in its config file, and every line it writes parsed as it
 * arrives: the limits as an operator configures them, over the CLI's stdio.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CLI, spawnNode, tempDir, TSX_IMPORT, type Child } from '../support/processes.js';
import type { Json } from '../support/rawWire.js';

export interface LimitsStdioServer {
  child: Child;
  /** Every JSON-RPC message the server wrote, in order. */
  lines: Json[];
  /** Writes one line to the server's stdin. */
  send(text: string): void;
  close(): Promise<void>;
}

export async function startLimitsStdioServer(limits: Readonly<Record<string, number>>, prefix: string): Promise<LimitsStdioServer> {
  const dir = await tempDir(prefix);
  const config = join(dir.path, 'taskvisor.yaml');
  const toolsModule = new URL('./fixtures/limitTools.ts', import.meta.url).pathname;
  const yamlLimits = Object.entries(limits)
    .map(([key, value]) => `  ${key}: ${value}`)
    .join('\n');
  await writeFile(config, `store: { kind: memory }\ntools: [${JSON.stringify(toolsModule)}]\nlimits:\n${yamlLimits}\n`);
  const child = spawnNode(['--import', TSX_IMPORT, CLI, 'serve', '--stdio', '--config', config, '--quiet'], { cwd: dir.path });
  const lines: Json[] = [];
  let buffer = '';
  child.process.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let cut: number;
    while ((cut = buffer.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buffer.slice(0, cut)) as Json);
      buffer = buffer.slice(cut + 1);
    }
  });
  return {
    child,
    lines,
    send: (text) => void child.process.stdin!.write(`${text}\n`),
    async close() {
      await child.kill('SIGKILL');
      await dir.remove();
    },
  };
}
