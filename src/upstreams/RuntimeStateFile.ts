/**
 * The runtime state file (ARCHITECTURE: "lowdb holds the runtime state
 * file"): small, rewritten whole on each change, mode 0600 because it holds
 * secrets. It keeps
 *
 * - `secrets`: named server secrets (the key that MACs wrapped upstream task
 *   ids; other features may add theirs), created once and kept across restarts
 *   so ids handed out before a restart still route;
 * - `upstreams`: per upstream, the cached `server/discover` result (or the
 *   legacy verdict) used to reconnect without probing;
 * - `health`: what a running server last reported about each upstream, read
 *   by `taskvisor upstreams` from another process;
 * - `heldTools`: per upstream, the tools whose calls may be held as tasks
 *   (their upstream names and `idempotentHint`), so a restart decides what
 *   becomes of their tasks before the upstream is connected again.
 *
 * Everything it keeps serves the upstreams, so it lives with them.
 *
 * One process writes a state file at a time (lowdb has no cross-process
 * locking); readers in other processes only read.
 */
import { randomBytes } from 'node:crypto';
import { chmod } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Low } from 'lowdb';
import { DurableJsonFile } from '../store/DurableJsonFile.js';
import { ensurePrivateDir, warnOnStderr } from '../store/privateDir.js';

/** A cached era verdict of an upstream (the SDK's `PriorDiscovery` shape). */
export type CachedDiscovery = { kind: 'modern'; discover: Record<string, unknown> } | { kind: 'legacy' };

export interface UpstreamCacheEntry {
  discovery: CachedDiscovery;
  /** Epoch ms when it was learned. */
  savedAt: number;
}

/** A tool whose calls may be held as tasks, as the last catalog listed it (by its name downstream). */
export interface HeldToolEntry {
  /** Its name upstream. */
  tool: string;
  idempotentHint?: true;
}

/** One upstream's health as the running server last wrote it. */
export interface UpstreamHealth {
  state: string;
  lastError: string | null;
  /** Epoch ms of the next connection attempt, while backing off. */
  retryAt: number | null;
  toolCount: number;
  protocolVersion: string | null;
  tasks: boolean;
  updatedAt: number;
}

export interface RuntimeState {
  version: 1;
  secrets: Record<string, string>;
  upstreams: Record<string, UpstreamCacheEntry>;
  health: { pid: number; updatedAt: number; upstreams: Record<string, UpstreamHealth> } | null;
  /** Per upstream, by tool name downstream (absent in files written before held calls existed). */
  heldTools?: Record<string, Record<string, HeldToolEntry>>;
}

const empty = (): RuntimeState => ({ version: 1, secrets: {}, upstreams: {}, health: null });

export class RuntimeStateFile {
  private readonly db: Low<RuntimeState>;
  private writing: Promise<void> = Promise.resolve();

  private constructor(readonly path: string) {
    this.db = new Low<RuntimeState>(new DurableJsonFile<RuntimeState>(path, { mode: 0o600 }), empty());
  }

  /** Opens (creating the folder; not yet the file) the state file at `path`. */
  static async open(path: string): Promise<RuntimeStateFile> {
    // 0700 when created; an existing folder open to others is reported.
    await ensurePrivateDir(dirname(path), warnOnStderr);
    const file = new RuntimeStateFile(path);
    await file.db.read();
    const data = file.db.data;
    if (typeof data !== 'object' || data === null || data.version !== 1) {
      throw new Error(`${path}: not a taskvisor runtime state file (expected {"version":1,...})`);
    }
    data.secrets ??= {};
    data.upstreams ??= {};
    data.health ??= null;
    data.heldTools ??= {};
    return file;
  }

  /** Reads a state file without taking it over (another process may own it); `null` when absent. */
  static async peek(path: string): Promise<RuntimeState | null> {
    return new DurableJsonFile<RuntimeState>(path).read();
  }

  get data(): Readonly<RuntimeState> {
    return this.db.data;
  }

  /** The secret called `name`: 32 random bytes (base64url), created and stored on first use. */
  async secret(name: string): Promise<Buffer> {
    let value = this.db.data.secrets[name];
    if (value === undefined) {
      value = randomBytes(32).toString('base64url');
      this.db.data.secrets[name] = value;
      await this.save();
    }
    return Buffer.from(value, 'base64url');
  }

  upstream(name: string): UpstreamCacheEntry | undefined {
    return this.db.data.upstreams[name];
  }

  async setUpstream(name: string, entry: UpstreamCacheEntry): Promise<void> {
    this.db.data.upstreams[name] = entry;
    await this.save();
  }

  async forgetUpstream(name: string): Promise<void> {
    if (!(name in this.db.data.upstreams)) return;
    delete this.db.data.upstreams[name];
    await this.save();
  }

  /** The held tools of `upstream` as last listed (empty when none are known). */
  heldTools(upstream: string): Record<string, HeldToolEntry> {
    return this.db.data.heldTools?.[upstream] ?? {};
  }

  /** Records `upstream`'s held tools; nothing is written when they did not change. */
  async setHeldTools(upstream: string, tools: Record<string, HeldToolEntry>): Promise<void> {
    const all = (this.db.data.heldTools ??= {});
    if (JSON.stringify(all[upstream] ?? {}) === JSON.stringify(tools)) return;
    all[upstream] = tools;
    await this.save();
  }

  async setHealth(upstreams: Record<string, UpstreamHealth>, now = Date.now()): Promise<void> {
    this.db.data.health = { pid: process.pid, updatedAt: now, upstreams };
    await this.save();
  }

  /** Writes are serialised: each one writes the data as it is when its turn comes. */
  save(): Promise<void> {
    const next = this.writing.then(async () => {
      await this.db.write();
      await chmod(this.path, 0o600); // a file created by an older version keeps no looser mode
    });
    this.writing = next.catch(() => undefined);
    return next;
  }
}
