/**
 * The skips the suite knows it can make, and which of them CI accepts.
 *
 * A test skips itself when the machine lacks what it drives (a browser, a
 * balancer, Graphviz, a tmpfs mount). On a developer's machine that is allowed:
 * `scripts/test.ts` lists every skip at the end of the run, with what to
 * install. Under `TASKVISOR_CI=1` (set by `.ci/run`, which installs all of it)
 * a skip fails the run unless its entry here says why CI accepts it
 * (`inCi`): a green CI run then means every test ran.
 *
 * A case that cannot apply to what it tests is not registered at all rather
 * than skipped (the store contract's `durable` and `plants` options), so it
 * never shows up here.
 */

/** One skip the suite can make. */
export interface KnownSkip {
  /** The test file (`test/...`). */
  file: string;
  /** The skipped test's or suite's name, or a pattern for a family of them. */
  name: string | RegExp;
  /** What the machine lacks, and how to provide it. */
  missing: string;
  /** Set only when CI accepts the skip: why it cannot run there. */
  inCi?: string;
}

export const KNOWN_SKIPS: readonly KnownSkip[] = [
  {
    file: 'test/operations/dashboard.browser.system.test.ts',
    name: 'the dashboard in headless Chromium',
    missing: 'Chromium: bash scripts/ensure-test-tools.sh (apt-get install chromium), or TASKVISOR_CHROMIUM=/path/to/chrome',
  },
  {
    file: 'test/scale/balancer.system.test.ts',
    name: /^examples\/cluster with (nginx|HAProxy)$/,
    missing: 'nginx and HAProxy: bash scripts/ensure-test-tools.sh (apt-get install nginx-light haproxy)',
  },
  {
    file: 'test/inspection/export.integration.test.ts',
    name: 'DOT renders with Graphviz (dot -Tsvg)',
    missing: 'Graphviz: bash scripts/ensure-test-tools.sh (apt-get install graphviz)',
  },
  {
    file: 'test/runtime/full-disk.system.test.ts',
    name: 'tasks/get answers working while the disk is full, completed once space returns',
    missing: 'mounting a tmpfs: run as root (or with CAP_SYS_ADMIN)',
  },
];

/** The entry that explains a skip of `name`, reported by `file` when the runner knows it. */
export function knownSkip(name: string, file: string | undefined): KnownSkip | undefined {
  return KNOWN_SKIPS.find(
    (entry) =>
      (file === undefined || file.endsWith(entry.file)) && (typeof entry.name === 'string' ? entry.name === name : entry.name.test(name)),
  );
}
