/** Where `serve` may put the operator surfaces (`--metrics`, `--ui`): checked before anything starts. */
import { ConfigError } from '../config/loadConfig.js';
import { isLoopbackHost } from '../transports/admission.js';

/**
 * The operator surfaces (metrics) show every principal's tasks: without auth
 * they may only be served where only loopback clients reach them. Refuses,
 * before anything starts, a setup that would expose them or serve them nowhere.
 */
export function checkOperatorListeners(setup: {
  auth: boolean;
  wantHttp: boolean;
  httpHost: string;
  operationsListen: { host?: string | undefined } | undefined;
}): void {
  const { auth, wantHttp, httpHost, operationsListen } = setup;
  if (!wantHttp && !operationsListen) {
    throw new ConfigError('--metrics and --ui need a listener: serve HTTP (--http) or give the operations a port (--operations HOST:PORT)');
  }
  if (auth) return;
  const operationsHost = operationsListen ? (operationsListen.host ?? '127.0.0.1') : undefined;
  if (operationsHost !== undefined && !isLoopbackHost(operationsHost)) {
    throw new ConfigError(
      `--metrics/--ui without auth: the operations port binds ${operationsHost}, not loopback; configure auth (operators need the operator scope) or bind it to 127.0.0.1`,
    );
  }
  if (wantHttp && !isLoopbackHost(httpHost) && operationsHost === undefined) {
    throw new ConfigError(
      `--metrics/--ui without auth: HTTP binds ${httpHost}, not loopback; configure auth (operators need the operator scope) or serve them on a loopback port (--operations 127.0.0.1:9464)`,
    );
  }
}
