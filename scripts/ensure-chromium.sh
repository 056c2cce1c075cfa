#!/usr/bin/env bash
# test/operations/dashboard.browser.system.test.ts drives Debian's chromium with playwright-core (no browser download):
# install it when it is missing (CI machines start fresh). Non-fatal: without it the browser test is skipped with a message.
set -uo pipefail
if [ -x /usr/bin/chromium ] || [ -n "${TASKVISOR_CHROMIUM:-}" ]; then exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: /usr/bin/chromium missing and cannot apt-get install it here; the dashboard browser test will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; then
  echo "ensure-chromium: apt-get install chromium failed; the dashboard browser test will be skipped" >&2
fi
exit 0
