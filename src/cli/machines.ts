/**
 * `taskvisor machines`: the state machines taskvisor runs, as pictures.
 *
 *   taskvisor machines list
 *   taskvisor machines export --format json|mermaid|dot [--out DIR] [--machine NAME]...
 *
 * Without `--out` the export goes to stdout: one machine exactly as its file
 * would hold it; several, each after a header comment line naming it
 * (`%%` for Mermaid, `//` for DOT and JSON). With `--out` each machine is
 * written to `DIR/<name>.<json|mmd|dot>` (DIR is created) and the written
 * paths are listed on stderr. Usage errors exit 2.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { MACHINES, type MachineEntry } from '../../machines/index.js';
import { toDot, toMermaid, toStatelyJson } from '../inspection/exportMachine.js';

export const MACHINES_USAGE = `Usage: taskvisor machines <subcommand> [options]

Subcommands:
  list                    Name, version and description of every machine
  export                  Print or write machine diagrams
    --format FORMAT       json (Stately Studio import), mermaid (stateDiagram-v2)
                          or dot (Graphviz); required
    --out DIR             Write DIR/<name>.<json|mmd|dot> instead of printing
    --machine NAME        Only this machine (repeatable; default: all)
`;

export const EXPORT_FORMATS = {
  json: { extension: 'json', comment: '//', render: (entry: MachineEntry) => `${JSON.stringify(toStatelyJson(entry.machine), null, 2)}\n` },
  mermaid: { extension: 'mmd', comment: '%%', render: (entry: MachineEntry) => toMermaid(entry.machine) },
  dot: { extension: 'dot', comment: '//', render: (entry: MachineEntry) => toDot(entry.machine) },
} as const;

export type ExportFormat = keyof typeof EXPORT_FORMATS;

export interface MachinesCommandIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** The registry to use (tests pass their own). */
  machines?: ReadonlyArray<MachineEntry>;
}

class UsageError extends Error {}

/** Runs `taskvisor machines <args>`; resolves with the exit code. */
export async function machinesCommand(args: string[], io: MachinesCommandIo = process): Promise<number> {
  const machines = io.machines ?? MACHINES;
  const [subcommand, ...rest] = args;
  try {
    switch (subcommand) {
      case 'list':
        parsed(() => parseArgs({ args: rest, options: {}, strict: true, allowPositionals: false }));
        io.stdout.write(listText(machines));
        return 0;
      case 'export':
        return await exportCommand(rest, io, machines);
      case 'help':
      case '--help':
      case '-h':
        io.stdout.write(MACHINES_USAGE);
        return 0;
      case undefined:
        throw new UsageError('missing subcommand (list or export)');
      default:
        throw new UsageError(`unknown subcommand ${JSON.stringify(subcommand)}; valid subcommands: list, export`);
    }
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr.write(`taskvisor machines: ${error.message}\n\n${MACHINES_USAGE}`);
    return 2;
  }
}

/** Runs a `parseArgs` call, turning its errors (unknown option, missing value…) into usage errors. */
function parsed<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function listText(machines: ReadonlyArray<MachineEntry>): string {
  const rows = [['NAME', 'VERSION', 'DESCRIPTION'], ...machines.map((entry) => [entry.name, String(entry.version), entry.description])];
  const widths = [0, 1].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => `${row[0]!.padEnd(widths[0]!)}  ${row[1]!.padEnd(widths[1]!)}  ${row[2]}`.trimEnd()).join('\n') + '\n';
}

async function exportCommand(args: string[], io: MachinesCommandIo, machines: ReadonlyArray<MachineEntry>): Promise<number> {
  const { values } = parsed(() =>
    parseArgs({
      args,
      options: {
        format: { type: 'string', short: 'f' },
        out: { type: 'string', short: 'o' },
        machine: { type: 'string', short: 'm', multiple: true },
      },
      strict: true,
      allowPositionals: false,
    }),
  );
  const formats = Object.keys(EXPORT_FORMATS).join(', ');
  if (values.format === undefined) throw new UsageError(`export needs --format; valid formats: ${formats}`);
  if (!Object.hasOwn(EXPORT_FORMATS, values.format)) {
    throw new UsageError(`unknown format ${JSON.stringify(values.format)}; valid formats: ${formats}`);
  }
  const format = EXPORT_FORMATS[values.format as ExportFormat];

  let selected = machines;
  if (values.machine !== undefined) {
    const names = machines.map((entry) => entry.name).join(', ');
    selected = values.machine.map((name) => {
      const entry = machines.find((candidate) => candidate.name === name);
      if (!entry) throw new UsageError(`unknown machine ${JSON.stringify(name)}; valid machines: ${names}`);
      return entry;
    });
    selected = selected.filter((entry, index) => selected.indexOf(entry) === index);
  }

  if (values.out === undefined) {
    const headed = selected.length > 1;
    io.stdout.write(
      selected
        .map((entry) => (headed ? `${format.comment} machine: ${entry.name} (version ${entry.version})\n` : '') + format.render(entry))
        .join('\n'),
    );
    return 0;
  }
  await mkdir(values.out, { recursive: true });
  for (const entry of selected) {
    const path = join(values.out, `${entry.name}.${format.extension}`);
    await writeFile(path, format.render(entry));
    io.stderr.write(`${path}\n`);
  }
  return 0;
}
