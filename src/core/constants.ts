/**
 * Constants shared across layers. They live in `core` so that an adapter
 * (upstreams, auth, transports) never has to import the composition root or
 * another adapter just to read one value.
 */

/** Where the default lowdb store and the runtime state file live, relative to the working directory. */
export const DEFAULT_STORE_DIR = './.taskvisor';

/**
 * Host names (and origins' hosts) that count as this machine. A listener bound
 * to loopback accepts only these `Host`/`Origin` values unless told otherwise
 * (DNS-rebinding defence), and a JWKS URL may use plain http only on these.
 */
export const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];
