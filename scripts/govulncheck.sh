#!/usr/bin/env bash
# govulncheck over the project's code (step vulncheck of make test), offline:
# against a Go vulnerability database built from a pinned golang.org/x/vulndb
# module, which the Go module proxy serves like any module. A vulnerability
# that our code can reach (a vulnerable symbol on a call path from our
# packages) fails the run with govulncheck's report of it; one in a module
# we require but whose vulnerable code we never call is listed, and passes.
#
# Both are pinned: govulncheck in scripts/tools/go.mod, the database's module
# here (version and hash, so a new database is a reviewed change, not a
# surprise on CI). The database is built once per pin by scripts/vulndb into
# the user's cache (override with VULNDB_CACHE) and reused after.
#
# The scan runs in three parts:
#   1. a canary: a fixture module (scripts/vulndb/testdata/vulnerable) that
#      calls golang.org/x/text at a version with a published vulnerability
#      must be reported, so a database that finds nothing fails, rather
#      than passing for a clean scan;
#   2. the project at package level (seconds: `go list`, no type checking):
#      every package our packages import, from every module and from the
#      standard library of the toolchain in use. No finding here means none
#      can be reachable, and the run ends (a vulnerability in a module we
#      require but in a package we do not import is listed, and passes);
#   3. otherwise the project at symbol level (minutes: a call graph of the
#      whole program): only vulnerabilities our code reaches fail it.
# (Not -scan module: without patterns it looks only at what the root
# package imports, and would miss the Pulumi plugin's modules.)
set -euo pipefail
cd "$(dirname "$0")/.."
# The toolchain go.mod names (its fixes included), fetched from the module
# proxy where the machine's Go is older.
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

vulndb_module=golang.org/x/vulndb
vulndb_version=v0.0.0-20261105234957-e22db6528018
vulndb_sum=h1:mfngRv0Yoh0VApsXKEN82CjD99kl7mtparN3bs3JnqI=
canary_id=GO-2026-5970 # golang.org/x/text/unicode/norm, fixed in v0.39.0

# Keyed by the database's version and by the converter (a change to it
# builds the database again).
converter=$(cat scripts/vulndb/main.go | sha256sum | cut -c1-12)
db="${VULNDB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mlplatform/vulndb}/$vulndb_version-$converter"

mkdir -p bin
go build -C scripts/tools -o "$PWD/bin/govulncheck" golang.org/x/vuln/cmd/govulncheck
if [ ! -f "$db/index/modules.json" ]; then
  go run ./scripts/vulndb -module "$vulndb_module@$vulndb_version" -sum "$vulndb_sum" -out "$db"
fi
dburl="file://$db"
govulncheck=$PWD/bin/govulncheck

# govulncheck exits 3 when it finds a vulnerability it reports (at symbol
# level, only those the code calls), 0 when none, anything else on errors.
scan() {
  local rc=0
  "$govulncheck" -db "$dburl" "$@" >"$out" 2>&1 || rc=$?
  return "$rc"
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

rc=0
(cd scripts/vulndb/testdata/vulnerable && scan ./...) || rc=$?
if [ "$rc" != 3 ] || ! grep -q "$canary_id" "$out"; then
  cat "$out"
  echo "govulncheck: the canary (scripts/vulndb/testdata/vulnerable) was not reported ($canary_id; exit $rc): the database at $db finds nothing"
  exit 1
fi

want=$(awk '$1 == "toolchain" { print $2 }' go.mod)
have=$(go env GOVERSION)
if [ -n "$want" ] && [ "$have" != "$want" ]; then
  echo "note: go.mod names toolchain $want but $have runs (GOTOOLCHAIN=$GOTOOLCHAIN): its standard library is what is checked"
fi

rc=0
scan -scan package ./... || rc=$?
case $rc in
0)
  sed -n '/in modules you require/p' "$out"
  echo "govulncheck: no known vulnerability in a package we import, nor in the standard library of $have (database $vulndb_module@$vulndb_version)"
  exit 0
  ;;
3) ;; # a package we import is affected: does our code reach it?
*)
  cat "$out"
  exit "$rc"
  ;;
esac

rc=0
scan ./... || rc=$?
case $rc in
0)
  # Listed, not failed: vulnerable code in modules we require that ours does not call.
  sed -n '/doesn.t appear to call/,$p;/^No vulnerabilities found/p' "$out"
  echo "govulncheck: no reachable vulnerability ($have, database $vulndb_module@$vulndb_version)"
  ;;
3)
  cat "$out"
  echo "govulncheck: our code reaches the vulnerabilities above (database $vulndb_module@$vulndb_version): raise the modules (or the toolchain line of go.mod) to the fixed versions"
  exit 1
  ;;
*)
  cat "$out"
  exit "$rc"
  ;;
esac
