/** The connection is gone (closed, timed out, never opened): the caller may retry once it is back. */
export class UpstreamUnavailableError extends Error {
  constructor(
    readonly upstream: string,
    message: string,
    /** The request's deadline passed (the connection may still be up). */
    readonly timedOut = false,
  ) {
    super(message);
    this.name = 'UpstreamUnavailableError';
  }
}
