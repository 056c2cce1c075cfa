/** The connection is gone (closed, timed out, never opened): the caller may retry once it is back. */
export class UpstreamUnavailableError extends Error {
  constructor(
    readonly upstream: string,
    message: string,
  ) {
    super(message);
    this.name = 'UpstreamUnavailableError';
  }
}
