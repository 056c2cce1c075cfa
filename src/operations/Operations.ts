/**
 * Operating a taskvisor service: health and readiness for
 * balancers and supervisors, Prometheus metrics, served on the HTTP
 * listener next to MCP (`routes`) or on a port of their own
 * ({@link listenOperations}) when only stdio or WebSocket serve.
 *
 * `/healthz` and `/readyz` are always on: they answer without credentials
 * (a balancer has none) and tell only states, never task data. `/metrics`
 * is off unless asked for, and only an operator may read it
 * ({@link OperatorGate}).
 *
 * This module serves the parts ({@link OperationParts}) it is given; it
 * builds none of them (the composition root, or `createOperations`, does).
 */
import type { HttpRoutes } from '../transports/HttpRoutes.js';
import { summarize } from '../store/ObservedTaskStore.js';
import type { HealthMonitor } from './HealthMonitor.js';
import type { OperatorGate } from './OperatorGate.js';
import type { OperationsRuntime } from './OperationsRuntime.js';
import type { TaskActivity } from './TaskActivity.js';
import type { TaskvisorMetrics } from './TaskvisorMetrics.js';
import { BASE_HEADERS, forMethod, isRead, json, methodNotAllowed } from './httpResponses.js';
import { OPERATOR_API_PREFIX, type OperatorApi } from './OperatorApi.js';
import { DASHBOARD_PREFIX, dashboardAsset } from './dashboardAssets.js';
import type { OperationsOptions } from './OperationsOptions.js';

export type { OperationsOptions };

/** The built parts the operations routes serve. */
export interface OperationParts {
  readonly health: HealthMonitor;
  readonly gate: OperatorGate;
  /** Present when metrics or the dashboard are on. */
  readonly activity: TaskActivity | undefined;
  readonly metrics: TaskvisorMetrics | undefined;
  /** Present when the dashboard is on. */
  readonly api: OperatorApi | undefined;
  /** Whether `/metrics` is served (the dashboard alone measures without serving it). */
  readonly serveMetrics: boolean;
}

/** The operations of one runtime: its health, its metrics, the dashboard and the routes serving them. */
export interface Operations {
  readonly health: HealthMonitor;
  /** Present when metrics (or the dashboard, which shows their numbers) are on. */
  readonly metrics: TaskvisorMetrics | undefined;
  /** Present when the dashboard is on. */
  readonly api: OperatorApi | undefined;
  /** Live tasks by status, timelines: present when metrics (or the dashboard) are on. */
  readonly activity: TaskActivity | undefined;
  readonly gate: OperatorGate;
  /** Every route (health, readiness, metrics when on): give to `listenHttp({ routes })` or serve with `listenOperations`. */
  readonly routes: HttpRoutes;
  /** `/healthz` and `/readyz` only: for a listener that must not carry the operator surfaces. */
  readonly healthRoutes: HttpRoutes;
  /** Stops measuring (also done when the runtime closes). */
  close(): void;
}

export const HEALTH_PATH = '/healthz';
export const READY_PATH = '/readyz';
export const METRICS_PATH = '/metrics';

/** The routes over built operations parts; closes them when the runtime closes. */
export function serveOperations(runtime: OperationsRuntime, parts: OperationParts): Operations {
  const { health, gate, activity, metrics, api, serveMetrics } = parts;

  // Unfinished tasks found at start are written again only when they change: count them once ready.
  // A shared store's unfinished tasks belong to every instance, so only embedded stores are seeded.
  let seeded: Promise<void> | undefined;
  const seed = (): Promise<void> => {
    if (seeded || !activity || runtime.phase !== 'ready' || runtime.store.ownership) return seeded ?? Promise.resolve();
    return (seeded = runtime.store.listNonTerminal().then(
      (records) => activity.seed(records.map(summarize)),
      (error: unknown) => {
        seeded = undefined;
        runtime.logger.error('operations: could not read the unfinished tasks', error);
      },
    ));
  };

  const owns = (pathname: string) =>
    pathname === HEALTH_PATH ||
    pathname === READY_PATH ||
    (serveMetrics && pathname === METRICS_PATH) ||
    (api !== undefined && (pathname === '/ui' || pathname.startsWith(DASHBOARD_PREFIX) || pathname.startsWith(OPERATOR_API_PREFIX)));
  const routes: HttpRoutes = {
    owns,
    async fetch(request, client) {
      const pathname = new URL(request.url).pathname;
      if (api && pathname.startsWith(OPERATOR_API_PREFIX)) {
        const admitted = await gate.admit(request, client);
        if (admitted instanceof Response) return admitted;
        await seed();
        return api.fetch(request, admitted);
      }
      if (!isRead(request)) return methodNotAllowed('GET, HEAD');
      if (pathname === HEALTH_PATH) {
        const report = health.health();
        return forMethod(request, json(report.status === 'ok' ? 200 : 503, report));
      }
      if (pathname === READY_PATH) {
        const report = health.readiness();
        return forMethod(request, json(report.status === 'ready' ? 200 : 503, report));
      }
      // The page itself holds no data (it reads through the gated API): served to anyone who asks.
      if (pathname !== METRICS_PATH) return forMethod(request, await dashboardAsset(pathname));
      const admitted = await gate.admit(request, client);
      if (admitted instanceof Response) return admitted;
      await seed();
      const body = await metrics!.text();
      return forMethod(request, new Response(body, { status: 200, headers: { 'content-type': metrics!.contentType, ...BASE_HEADERS } }));
    },
  };
  const healthRoutes: HttpRoutes = {
    owns: (pathname) => pathname === HEALTH_PATH || pathname === READY_PATH,
    fetch: (request, client) => routes.fetch(request, client),
  };
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    health.close();
    api?.close();
    metrics?.close();
    activity?.close();
  };
  runtime.onClose(close);
  return { health, metrics, api, activity, gate, routes, healthRoutes, close };
}
