/**
 * Credentials of the `postgres` store: an `upstream_credentials` table in the
 * task store's schema, shared by every instance, so a grant made through one
 * instance serves a task adopted by another. `take` is one
 * `DELETE … RETURNING`: a pending authorization is redeemed at most once
 * across instances.
 */
import type pg from 'pg';
import { escapeIdentifier, loadPg } from '../postgres/pgModule.js';
import type { CredentialStore } from './CredentialStore.js';

export interface PostgresCredentialStoreOptions {
  url: string;
  /** Default `taskvisor`, as the task store. */
  schema?: string;
}

export class PostgresCredentialStore implements CredentialStore {
  readonly #url: string;
  readonly #table: string;
  readonly #schema: string;
  #pool: pg.Pool | undefined;

  constructor(options: PostgresCredentialStoreOptions) {
    this.#url = options.url;
    this.#schema = escapeIdentifier(options.schema ?? 'taskvisor');
    this.#table = `${this.#schema}.upstream_credentials`;
  }

  async open(): Promise<void> {
    if (this.#pool) return;
    const { Pool } = await loadPg();
    const pool = new Pool({ connectionString: this.#url, max: 2 });
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${this.#schema}`);
    await pool.query(
      `CREATE TABLE IF NOT EXISTS ${this.#table} (name TEXT PRIMARY KEY, sealed TEXT NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    );
    this.#pool = pool;
  }

  async get(name: string): Promise<string | undefined> {
    const result = await this.#open().query<{ sealed: string }>(`SELECT sealed FROM ${this.#table} WHERE name = $1`, [name]);
    return result.rows[0]?.sealed;
  }

  async put(name: string, sealed: string): Promise<void> {
    await this.#open().query(
      `INSERT INTO ${this.#table} (name, sealed) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET sealed = EXCLUDED.sealed, updated_at = now()`,
      [name, sealed],
    );
  }

  async delete(name: string): Promise<boolean> {
    return ((await this.#open().query(`DELETE FROM ${this.#table} WHERE name = $1`, [name])).rowCount ?? 0) > 0;
  }

  async take(name: string): Promise<string | undefined> {
    const result = await this.#open().query<{ sealed: string }>(`DELETE FROM ${this.#table} WHERE name = $1 RETURNING sealed`, [name]);
    return result.rows[0]?.sealed;
  }

  async entries(): Promise<Array<[string, string]>> {
    const result = await this.#open().query<{ name: string; sealed: string }>(`SELECT name, sealed FROM ${this.#table}`);
    return result.rows.map((row) => [row.name, row.sealed]);
  }

  async close(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.end();
  }

  #open(): pg.Pool {
    if (!this.#pool) throw new Error('the credential store is not open');
    return this.#pool;
  }
}
