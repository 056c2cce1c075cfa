/**
 * The generated diagrams in `docs/machines.md`: for each machine of the
 * registry, a ```mermaid fence between `<!-- generated:NAME:start -->` and
 * `<!-- generated:NAME:end -->`, written by `npm run docs:machines`
 * (`scripts/update-machine-docs.ts`) and checked by the export tests, so the
 * picture in the docs cannot drift from the code.
 */
import type { MachineEntry } from '../../machines/index.js';
import { toMermaid } from './exportMachine.js';

export const startMarker = (name: string) => `<!-- generated:${name}:start -->`;
export const endMarker = (name: string) => `<!-- generated:${name}:end -->`;

/** What belongs between the markers of `entry`: its Mermaid diagram in a fence. */
export function generatedBlock(entry: MachineEntry): string {
  return `\`\`\`mermaid\n${toMermaid(entry.machine)}\`\`\``;
}

/** The text between the markers of `name` (trimmed), or `undefined` when the markers are missing or out of order. */
export function extractGeneratedBlock(text: string, name: string): string | undefined {
  const start = text.indexOf(startMarker(name));
  const end = text.indexOf(endMarker(name));
  if (start < 0 || end < start) return undefined;
  return text.slice(start + startMarker(name).length, end).trim();
}

export interface DocsUpdate {
  text: string;
  /** Machines whose block was rewritten. */
  updated: string[];
  /** Machines that had no markers: a section with markers was appended for each. */
  added: string[];
}

/** `text` with the generated block of every machine brought up to date (missing ones appended as new sections). */
export function updateMachineDocs(text: string, machines: ReadonlyArray<MachineEntry>): DocsUpdate {
  const updated: string[] = [];
  const added: string[] = [];
  for (const entry of machines) {
    const block = generatedBlock(entry);
    const current = extractGeneratedBlock(text, entry.name);
    if (current === undefined) {
      text = `${text.trimEnd()}\n\n## The ${entry.name} machine\n\n${entry.description}\n\n${startMarker(entry.name)}\n${block}\n${endMarker(entry.name)}\n`;
      added.push(entry.name);
    } else if (current !== block) {
      const start = text.indexOf(startMarker(entry.name)) + startMarker(entry.name).length;
      const end = text.indexOf(endMarker(entry.name));
      text = `${text.slice(0, start)}\n${block}\n${text.slice(end)}`;
      updated.push(entry.name);
    }
  }
  return { text, updated, added };
}
