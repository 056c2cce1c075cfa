/** Small response builders shared by the operations routes. */

/** Headers every operations response carries: never cached, never sniffed. */
export const BASE_HEADERS: Readonly<Record<string, string>> = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};

/** A JSON body with the operations headers. */
export const json = (status: number, body: unknown, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...BASE_HEADERS, ...headers } });

/** `405` for a method the route does not serve. */
export const methodNotAllowed = (allow: string): Response => json(405, { error: `method not allowed; use ${allow}` }, { allow });

/** `404` for a path under an operations prefix that names nothing. */
export const notFound = (): Response => json(404, { error: 'not found' });

/** Whether `request` reads (GET or HEAD); HEAD gets the GET answer without its body. */
export const isRead = (request: Request): boolean => request.method === 'GET' || request.method === 'HEAD';

/** The GET answer, without a body for HEAD. */
export const forMethod = (request: Request, response: Response): Response =>
  request.method === 'HEAD' ? new Response(null, { status: response.status, headers: response.headers }) : response;
