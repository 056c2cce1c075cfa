/**
 * The Postgres store's LISTEN connection (a dedicated client, not a pooled
 * one): reconnects with backoff and asks its owner to re-read after every
 * (re)connect, since a NOTIFY sent while no LISTEN was active is lost.
 */
import type pg from 'pg';
import { escapeIdentifier, loadPg } from './pgModule.js';

/** The LISTEN connection: reconnects with backoff and asks for a resync after every reconnect. */
export class FeedConnection {
  #client: pg.Client | undefined;
  #closed = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #backoffMs = 100;
  #connectedOnce = false;

  constructor(
    private readonly options: {
      url: string;
      applicationName: string;
      channels: string[];
      onNotification: (channel: string, payload: string) => void;
      onResync: () => void;
      onError: (error: Error) => void;
    },
  ) {}

  start(): void {
    void this.#connect();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const { Client } = await loadPg();
    if (this.#closed) return; // closed while the driver loaded
    const client = new Client({ connectionString: this.options.url, application_name: this.options.applicationName });
    let failed = false;
    const fail = (error: Error) => {
      if (failed || this.#closed) return;
      failed = true;
      if (this.#client === client) this.#client = undefined;
      client.end().catch(() => undefined);
      this.options.onError(error);
      this.#retryTimer = setTimeout(() => void this.#connect(), this.#backoffMs);
      this.#backoffMs = Math.min(this.#backoffMs * 2, 2_000);
    };
    client.on('error', fail);
    client.on('end', () => fail(new Error('connection ended')));
    client.on('notification', (message) => this.options.onNotification(message.channel, message.payload ?? ''));
    try {
      await client.connect();
      for (const channel of this.options.channels) await client.query(`LISTEN ${escapeIdentifier(channel)}`);
    } catch (error) {
      fail(error as Error);
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#backoffMs = 100;
    // Whatever was NOTIFYed while no LISTEN was active is lost: the subscriber re-reads (also on the first connect).
    this.#connectedOnce = true;
    this.options.onResync();
  }

  get connected(): boolean {
    return this.#connectedOnce && this.#client !== undefined;
  }
}
