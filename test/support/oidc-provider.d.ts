/**
 * The part of oidc-provider's API the test authorization server uses
 * (the package ships no type declarations).
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface Client {
    clientId: string;
    grantTypeAllowed(grant: string): boolean;
  }
  interface Interaction {
    uid: string;
    prompt: { name: string; details: Record<string, unknown> };
    params: Record<string, unknown>;
    session?: { accountId: string };
    grantId?: string;
  }
  interface Grant {
    addOIDCScope(scope: string): void;
    addResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  }
  interface AccessToken {
    accountId: string;
    clientId?: string;
    scope?: string;
    aud?: string | string[];
    exp?: number;
    isExpired: boolean;
  }
  export interface Configuration {
    [key: string]: unknown;
    issueRefreshToken?: (ctx: unknown, client: Client, source: unknown) => Promise<boolean>;
    findAccount?: (ctx: unknown, sub: string) => Promise<{ accountId: string; claims(): Promise<Record<string, unknown>> }>;
    interactions?: { url: (ctx: unknown, interaction: Interaction) => Promise<string> };
  }
  export default class Provider {
    constructor(issuer: string, configuration: Configuration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    Grant: { new (init: { accountId: string; clientId: string }): Grant; find(id: string): Promise<Grant | undefined> };
    AccessToken: { find(token: string): Promise<AccessToken | undefined> };
  }
}
