/** The Postgres store's options and their defaults. */

export const DEFAULT_POSTGRES_SCHEMA = 'taskvisor';
export const DEFAULT_POSTGRES_POOL_SIZE = 10;
export const DEFAULT_LEASE_MS = 5_000;
/** Schema names this store accepts: plain lower-case identifiers short enough for a NOTIFY channel (63 bytes). */
export const POSTGRES_SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,47}$/;

export interface PostgresTaskStoreOptions {
  /** `postgres://user@host:port/database` (anything node-postgres accepts). */
  url: string;
  /** Schema holding the tables (created if missing). Default `taskvisor`. */
  schema?: string;
  /** Connections in the pool (plus one for LISTEN). Default 10. */
  poolSize?: number;
  /** How long an instance's lease lasts without renewal. Default 5000 ms. */
  leaseMs?: number;
  /** This instance's id. Default: random. */
  instanceId?: string;
  /** Shown in `pg_stat_activity.application_name`. Default `taskvisor <instanceId>`. */
  applicationName?: string;
  /** Called once for each stored record found damaged (then set aside). Default: a line on stderr. */
  onCorrupt?: (taskId: string, error: Error) => void;
  /**
   * A read-only view (`taskvisor tasks list|show|check` next to running
   * instances): a damaged record it meets is reported, never moved, as in
   * an embedded store opened without its lock. Default false.
   */
  readOnly?: boolean;
  /** Called when the LISTEN connection fails (it reconnects). Default: a line on stderr. */
  onFeedError?: (error: Error) => void;
}
