#!/usr/bin/env bash
# Installs the programs the system and integration tests drive, when missing (CI machines start fresh):
#   nginx, HAProxy  test/scale/balancer.system.test.ts runs the examples/cluster configs in them
#   chromium        test/operations/dashboard.browser.system.test.ts drives it with playwright-core (no browser download)
#   dot (Graphviz)  test/inspection/export.integration.test.ts renders the DOT export
# Fails when one is still missing afterwards: without it its test would skip, and CI (TASKVISOR_CI=1)
# fails on a skip it does not expect anyway; failing here says why, before the suite runs.
# Needs root and the Debian mirror. TASKVISOR_CHROMIUM names another browser binary instead of /usr/bin/chromium.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }
chromium=${TASKVISOR_CHROMIUM:-/usr/bin/chromium}

missing=()
have nginx || missing+=(nginx-light)
have haproxy || missing+=(haproxy)
[ -x "$chromium" ] || missing+=(chromium)
have dot || missing+=(graphviz)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-test-tools: missing ${missing[*]} and cannot apt-get install them here (needs root and apt-get)" >&2
  exit 1
fi
echo "ensure-test-tools: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

# Debian may start the services it just installed: stop those (the balancer test starts its own instances).
for package in "${missing[@]}"; do
  case "$package" in
    nginx-light) service=nginx ;;
    haproxy) service=haproxy ;;
    *) continue ;;
  esac
  if command -v service >/dev/null 2>&1; then service "$service" stop >/dev/null 2>&1 || true; fi
done

still=()
have nginx || still+=(nginx)
have haproxy || still+=(haproxy)
[ -x "$chromium" ] || still+=("chromium ($chromium)")
have dot || still+=(dot)
if [ ${#still[@]} -gt 0 ]; then
  echo "ensure-test-tools: still missing after apt-get install: ${still[*]}" >&2
  exit 1
fi
