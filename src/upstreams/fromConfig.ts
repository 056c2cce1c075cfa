/**
 * The config file's `upstreams`, `aggregator` and `state` sections as
 * runtime options. Paths resolve against the config file's folder, so
 * `taskvisor serve` and `taskvisor upstreams` agree on the state file.
 */
import path from 'node:path';
import { resolveFromConfig, type LoadedConfig } from '../config/loadConfig.js';
import { DEFAULT_STORE_DIR } from '../core/constants.js';
import { DEFAULT_SQLITE_FILE } from '../store/index.js';
import type { UpstreamSpec } from './UpstreamSpec.js';

/** Where the runtime state file of this config lives. */
export function stateFileOf(loaded: LoadedConfig | undefined): string {
  const config = loaded?.config;
  if (config?.state?.file) return resolveFromConfig(loaded, config.state.file);
  const store = config?.store;
  if (store?.kind === 'sqlite')
    return path.join(
      path.dirname(store.file ? resolveFromConfig(loaded, store.file) : path.resolve(DEFAULT_SQLITE_FILE)),
      'runtime-state.json',
    );
  if (store?.kind === 'lowdb' && store.dir) return path.join(resolveFromConfig(loaded, store.dir), 'runtime-state.json');
  return path.resolve(DEFAULT_STORE_DIR, 'runtime-state.json');
}

/** The configured upstreams, with `cwd` (and a `./`-relative `command`) resolved against the config file. */
export function upstreamsOf(loaded: LoadedConfig | undefined): UpstreamSpec[] {
  return (loaded?.config.upstreams ?? []).map((entry) => {
    if (entry.type !== 'stdio') return { ...entry };
    const relativeCommand = entry.command.startsWith('./') || entry.command.startsWith('../');
    return {
      ...entry,
      command: relativeCommand ? resolveFromConfig(loaded, entry.command) : entry.command,
      cwd: resolveFromConfig(loaded, entry.cwd ?? '.'),
    };
  });
}
