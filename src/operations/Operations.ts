/**
 * Operating a taskvisor service (issue 16): health and readiness for
 * balancers and supervisors, served on the HTTP listener next to MCP
 * (`routes`) or on a port of their own ({@link listenOperations}) when only
 * stdio or WebSocket serve.
 *
 * `/healthz` and `/readyz` are always on: they answer without credentials
 * (a balancer has none) and tell only states, never task data.
 */
import type { HttpRoutes } from '../transports/HttpRoutes.js';
import { HealthMonitor, type HealthOptions } from './HealthMonitor.js';
import type { OperationsRuntime } from './OperationsRuntime.js';
import { forMethod, isRead, json, methodNotAllowed } from './httpResponses.js';

/** Options of {@link createOperations}. */
export interface OperationsOptions extends HealthOptions {}

/** The operations of one runtime: its health and the routes serving it. */
export interface Operations {
  readonly health: HealthMonitor;
  /** `/healthz`, `/readyz`: give to `listenHttp({ routes })` or serve with `listenOperations`. */
  readonly routes: HttpRoutes;
  /** Stops measuring (also done when the runtime closes). */
  close(): void;
}

export const HEALTH_PATH = '/healthz';
export const READY_PATH = '/readyz';

/** Builds the operations of `runtime` (started or not: readiness reports recovery while it starts). */
export function createOperations(runtime: OperationsRuntime, options: OperationsOptions = {}): Operations {
  const health = new HealthMonitor(runtime, options);
  const routes: HttpRoutes = {
    owns: (pathname) => pathname === HEALTH_PATH || pathname === READY_PATH,
    async fetch(request) {
      if (!isRead(request)) return methodNotAllowed('GET, HEAD');
      const pathname = new URL(request.url).pathname;
      if (pathname === HEALTH_PATH) {
        const report = health.health();
        return forMethod(request, json(report.status === 'ok' ? 200 : 503, report));
      }
      const report = health.readiness();
      return forMethod(request, json(report.status === 'ready' ? 200 : 503, report));
    },
  };
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    health.close();
  };
  runtime.onClose(async () => close());
  return { health, routes, close };
}
