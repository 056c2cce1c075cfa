#!/usr/bin/env bash
# test/scale/balancer.system.test.ts runs the examples/cluster configs in Debian's nginx and HAProxy:
# install them when they are missing (CI machines start fresh). Needs root and the Debian mirror.
set -euo pipefail
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then have_nginx=1; else have_nginx=0; fi
if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then have_haproxy=1; else have_haproxy=0; fi
if [ "$have_nginx" = 1 ] && [ "$have_haproxy" = 1 ]; then exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-balancers: nginx/haproxy missing and cannot apt-get install them here; test/scale/balancer.system.test.ts will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends nginx-light haproxy >/dev/null
# Debian may start the services it just installed: stop those (the test starts its own instances).
installed=()
[ "$have_nginx" = 1 ] || installed+=(nginx)
[ "$have_haproxy" = 1 ] || installed+=(haproxy)
for service in "${installed[@]}"; do
  if command -v service >/dev/null 2>&1; then service "$service" stop >/dev/null 2>&1 || true; fi
done
