/**
 * Extra routes an HTTP listener serves next to MCP (health, metrics, the
 * dashboard: issue 16). They are asked first and answer outside the MCP
 * front door: each route applies the checks it needs itself.
 */
export interface HttpRoutes {
  /** Whether `pathname` is one of these routes (the MCP path never should be). */
  owns(pathname: string): boolean;
  /** Answers a request whose path {@link owns} accepted. */
  fetch(request: Request): Promise<Response>;
}
