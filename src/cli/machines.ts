/**
 * `taskvisor machines`: the state machines taskvisor runs, as pictures.
 *
 *   taskvisor machines list
 *   taskvisor machines export --format json|mermaid|dot [--out DIR] [--machine NAME]...
 *
 * Without `--out` the export goes to stdout as one valid document:
 * one machine exactly as its file would hold it; several as one JSON
 * object keyed by machine name, or one DOT file holding a digraph per machine
 * (each after a `//` comment naming it). A Mermaid document holds one
 * diagram, so Mermaid on stdout takes one `--machine`. With `--out` each
 * machine is written to `DIR/<name>.<json|mmd|dot>` (DIR is created) and the
 * written paths are listed on stderr. Usage errors exit 2.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MACHINES, type MachineEntry } from '../../machines/index.js';
import { toDot, toMermaid, toStatelyJson } from '../inspection/exportMachine.js';
import { isHelpWord, parseCommandLine, USAGE_EXIT_CODE, UsageError, type CliIo } from './usage.js';

export const MACHINES_USAGE = `Usage: taskvisor machines <subcommand> [options]

Subcommands:
  list                    Name, version and description of every machine
  export                  Print or write machine diagrams
    -f, --format FORMAT   json (Stately Studio import), mermaid (stateDiagram-v2)
                          or dot (Graphviz); required
    -o, --out DIR         Write DIR/<name>.<json|mmd|dot> instead of printing
    -m, --machine NAME    Only this machine (repeatable; default: all)

On stdout: one machine as its file holds it; several as one JSON object keyed
by name, or one DOT file with a digraph each. Mermaid on stdout takes one
--machine (a Mermaid document holds one diagram); --out writes them all.
`;

export const EXPORT_FORMATS = {
  json: {
    extension: 'json',
    render: (entry: MachineEntry) => `${JSON.stringify(toStatelyJson(entry.machine), null, 2)}\n`,
    /** One JSON object keyed by machine name. */
    renderAll: (entries: ReadonlyArray<MachineEntry>) =>
      `${JSON.stringify(Object.fromEntries(entries.map((entry) => [entry.name, toStatelyJson(entry.machine)])), null, 2)}\n`,
  },
  mermaid: { extension: 'mmd', render: (entry: MachineEntry) => toMermaid(entry.machine), renderAll: undefined },
  dot: {
    extension: 'dot',
    render: (entry: MachineEntry) => toDot(entry.machine),
    /** A DOT file may hold several graphs (Graphviz renders each). */
    renderAll: (entries: ReadonlyArray<MachineEntry>) =>
      entries.map((entry) => `// machine: ${entry.name} (version ${entry.version})\n${toDot(entry.machine)}`).join('\n'),
  },
} as const;

export type ExportFormat = keyof typeof EXPORT_FORMATS;

export interface MachinesCommandIo extends CliIo {
  /** The registry to use (tests pass their own). */
  machines?: ReadonlyArray<MachineEntry>;
}

/** Runs `taskvisor machines <args>`; resolves with the exit code. */
export async function machinesCommand(args: string[], io: MachinesCommandIo = process): Promise<number> {
  const machines = io.machines ?? MACHINES;
  const [subcommand, ...rest] = args;
  try {
    switch (subcommand) {
      case 'list':
        if (parseCommandLine(rest, {}, MACHINES_USAGE).values.help) io.stdout.write(MACHINES_USAGE);
        else io.stdout.write(listText(machines));
        return 0;
      case 'export':
        return await exportCommand(rest, io, machines);
      case undefined:
        throw new UsageError('missing subcommand (list or export)', MACHINES_USAGE);
      default:
        if (isHelpWord(subcommand)) {
          io.stdout.write(MACHINES_USAGE);
          return 0;
        }
        throw new UsageError(`unknown subcommand ${JSON.stringify(subcommand)}; valid subcommands: list, export`, MACHINES_USAGE);
    }
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr.write(`taskvisor machines: ${error.message}\n\n${error.usage}`);
    return USAGE_EXIT_CODE;
  }
}

function listText(machines: ReadonlyArray<MachineEntry>): string {
  const rows = [['NAME', 'VERSION', 'DESCRIPTION'], ...machines.map((entry) => [entry.name, String(entry.version), entry.description])];
  const widths = [0, 1].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => `${row[0]!.padEnd(widths[0]!)}  ${row[1]!.padEnd(widths[1]!)}  ${row[2]}`.trimEnd()).join('\n') + '\n';
}

async function exportCommand(args: string[], io: MachinesCommandIo, machines: ReadonlyArray<MachineEntry>): Promise<number> {
  const { values } = parseCommandLine(
    args,
    {
      format: { type: 'string', short: 'f' },
      out: { type: 'string', short: 'o' },
      machine: { type: 'string', short: 'm', multiple: true },
    },
    MACHINES_USAGE,
  );
  if (values.help) {
    io.stdout.write(MACHINES_USAGE);
    return 0;
  }
  const formats = Object.keys(EXPORT_FORMATS).join(', ');
  if (values.format === undefined) throw new UsageError(`export needs --format; valid formats: ${formats}`, MACHINES_USAGE);
  if (!Object.hasOwn(EXPORT_FORMATS, values.format)) {
    throw new UsageError(`unknown format ${JSON.stringify(values.format)}; valid formats: ${formats}`, MACHINES_USAGE);
  }
  const format = EXPORT_FORMATS[values.format as ExportFormat];

  let selected = machines;
  if (values.machine !== undefined) {
    const names = machines.map((entry) => entry.name).join(', ');
    selected = values.machine.map((name) => {
      const entry = machines.find((candidate) => candidate.name === name);
      if (!entry) throw new UsageError(`unknown machine ${JSON.stringify(name)}; valid machines: ${names}`, MACHINES_USAGE);
      return entry;
    });
    selected = selected.filter((entry, index) => selected.indexOf(entry) === index);
  }

  if (values.out === undefined) {
    if (selected.length === 1) io.stdout.write(format.render(selected[0]!));
    else if (format.renderAll) io.stdout.write(format.renderAll(selected));
    else {
      const names = selected.map((entry) => entry.name).join(', ');
      throw new UsageError(
        `a Mermaid document holds one diagram: choose one with --machine NAME (${names}), or write them all with --out DIR`,
        MACHINES_USAGE,
      );
    }
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
