#!/bin/sh
# Regenerates test/workflows/gotemplate/golden.json from cases.json with real Go text/template + sprig.
# Needs Debian's golang-go and golang-github-masterminds-sprig-dev; runs offline in GOPATH mode
# (a temporary GOPATH maps the /v3 import paths onto Debian's source tree).
set -e
here=$(cd "$(dirname "$0")" && pwd)
dir="$here/../test/workflows/gotemplate"
gopath=$(mktemp -d)
trap 'rm -rf "$gopath"' EXIT
mkdir -p "$gopath/src/github.com" "$gopath/src/golang.org"
for d in /usr/share/gocode/src/github.com/*; do
  [ "$(basename "$d")" = Masterminds ] || ln -s "$d" "$gopath/src/github.com/"
done
ln -s /usr/share/gocode/src/golang.org/x "$gopath/src/golang.org/x"
mkdir -p "$gopath/src/github.com/Masterminds/sprig" "$gopath/src/github.com/Masterminds/semver" "$gopath/src/gt"
ln -s /usr/share/gocode/src/github.com/Masterminds/goutils "$gopath/src/github.com/Masterminds/goutils"
cp "$here/gotemplate-golden/main.go" "$gopath/src/gt/"
# sprig/v3 and semver/v3: the v3 path is the package itself.
ln -s /usr/share/gocode/src/github.com/Masterminds/sprig "$gopath/src/github.com/Masterminds/sprig/v3"
ln -s /usr/share/gocode/src/github.com/Masterminds/semver "$gopath/src/github.com/Masterminds/semver/v3"
cd "$gopath/src/gt"
GO111MODULE=off GOPATH="$gopath" GOCACHE="$gopath/cache" go run main.go < "$dir/cases.json" > "$dir/golden.json"
echo "wrote $dir/golden.json"
