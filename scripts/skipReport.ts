/**
 * Counts the tests a run skipped and says which of them a CI run may not skip
 * (`scripts/expectedSkips.ts`): `scripts/test.ts` feeds it node:test's events
 * and prints {@link SkipReport.summary} once the run is over.
 */
import { relative } from 'node:path';
import { knownSkip, type KnownSkip } from './expectedSkips.js';
import { REPO_ROOT } from './testTiers.js';

/** What node:test reports of a finished test or suite (`test:pass`, `test:fail`). */
export interface TestEventData {
  name: string;
  file?: string;
  skip?: string | boolean;
}

interface Skipped {
  name: string;
  file: string | undefined;
  reason: string;
  known: KnownSkip | undefined;
}

export class SkipReport {
  private readonly skipped: Skipped[] = [];

  /** `inCi`: whether this run is CI's, where only skips whose entry says `inCi` are accepted. */
  constructor(private readonly inCi: boolean) {}

  /** Records the event when it is a skip (a skipped test, or a skipped suite whose tests never ran). */
  record(data: TestEventData): void {
    if (data.skip === undefined || data.skip === false) return;
    const file = data.file === undefined ? undefined : relative(REPO_ROOT, data.file.replace(/^file:\/\//, ''));
    const reason = typeof data.skip === 'string' ? data.skip : 'skipped';
    this.skipped.push({ name: data.name, file, reason, known: knownSkip(data.name, file) });
  }

  get count(): number {
    return this.skipped.length;
  }

  /** The skips that fail this run: under CI, every one without an `inCi` entry; elsewhere none. */
  get unexpected(): readonly Skipped[] {
    return this.inCi ? this.skipped.filter((skip) => skip.known?.inCi === undefined) : [];
  }

  /** Lines for the end of the run: the count, then each skip with its reason and what would let it run. */
  summary(): string[] {
    const lines = [`# ${this.skipped.length} skipped`];
    const unexpected = new Set(this.unexpected);
    for (const skip of this.skipped) {
      const where = skip.file ? `${skip.file}: ` : '';
      const mark = unexpected.has(skip)
        ? 'NOT ALLOWED IN CI'
        : skip.known?.inCi !== undefined
          ? `accepted in CI: ${skip.known.inCi}`
          : 'skipped';
      lines.push(`#   ${mark}: ${where}${skip.name} (${skip.reason})`);
      if (skip.known && !skip.known.inCi) lines.push(`#     needs ${skip.known.missing}`);
    }
    if (unexpected.size > 0) {
      lines.push(
        `# ${unexpected.size} skip(s) CI does not expect: CI installs what the tests need (.ci/run), so a skip there means a test did not run.`,
        '# Install what is missing, or list the skip with its reason in scripts/expectedSkips.ts (inCi).',
      );
    }
    return lines;
  }
}
