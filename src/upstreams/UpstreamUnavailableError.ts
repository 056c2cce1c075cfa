/** The connection is gone (closed, timed out, never opened): the caller may retry once it is back. */
export class UpstreamUnavailableError extends Error {
  constructor(
    readonly upstream: string,
    message: string,
    /** The upstream refused the connection's credentials (HTTP 401). */
    readonly unauthorized = false,
  ) {
    super(message);
    this.name = 'UpstreamUnavailableError';
  }
}
