/**
 * Extra routes an HTTP listener serves next to MCP (health, metrics, the
 * dashboard). They are asked first and answer outside the MCP
 * front door: each route applies the checks it needs itself.
 */
export interface HttpRoutes {
  /** Whether `pathname` is one of these routes (the MCP path never should be). */
  owns(pathname: string): boolean;
  /**
   * Answers a request whose path {@link owns} accepted. `client` is what the
   * listener knows of the peer (absent when mounted as a plain `fetch`: a
   * route must then assume nothing about it).
   */
  fetch(request: Request, client?: HttpClientInfo): Promise<Response>;
}

/** What a Node listener knows of the peer of a request. */
export interface HttpClientInfo {
  /** The socket's remote address (`127.0.0.1`, `::1`, `::ffff:127.0.0.1`...). */
  remoteAddress?: string | undefined;
}
