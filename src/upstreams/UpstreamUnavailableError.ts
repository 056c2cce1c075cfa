/** The connection is gone (closed, timed out, never opened): the caller may retry once it is back. */
export class UpstreamUnavailableError extends Error {
  /** The upstream refused the connection's credentials (HTTP 401). */
  readonly unauthorized: boolean;
  /** The request's deadline passed (the connection may still be up). */
  readonly timedOut: boolean;

  constructor(
    readonly upstream: string,
    message: string,
    cause: { unauthorized?: boolean; timedOut?: boolean } = {},
  ) {
    super(message);
    this.name = 'UpstreamUnavailableError';
    this.unauthorized = cause.unauthorized ?? false;
    this.timedOut = cause.timedOut ?? false;
  }
}
