#!/usr/bin/env bash
# staticcheck over the hand-written code (make lint; step staticcheck of make
# test): every package with its tests, and hwprobe again with its test tag
# hwprobe_nvmlmock. The two runs are merged (staticcheck -merge), so what
# only one build uses is not reported unused.
#
# The version is pinned in scripts/tools/go.mod (a module of its own, so the
# project's go.mod does not require it): go build puts it in bin/staticcheck,
# and links it again only when the pin or the Go toolchain changed.
#
# Generated files (a "// Code generated ... DO NOT EDIT." line: the Go SDK in
# pulumi/sdk/go) are not ours to fix: staticcheck skips them for most checks
# but not for all (ST1005, U1000, SA1019 among others), so their findings are
# dropped here. Any other line of output fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

# go-nvml's cgo preamble uses declarations NVML marks deprecated: the
# compiler's warnings about them are not ours to fix.
case " ${CGO_CFLAGS:-} " in
*" -Wno-deprecated-declarations "*) ;;
*) export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -Wno-deprecated-declarations" ;;
esac

mkdir -p bin
go build -C scripts/tools -o "$PWD/bin/staticcheck" honnef.co/go/tools/cmd/staticcheck

runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
bin/staticcheck -f binary ./... >"$runs/all"
bin/staticcheck -f binary -tags hwprobe_nvmlmock ./hwprobe/... >"$runs/tagged"

rc=0
out=$(bin/staticcheck -merge "$runs/all" "$runs/tagged") || rc=$?
kept=$(
  drop=0
  while IFS= read -r line; do
    if [[ $line == $'\t'* ]]; then # more of the finding above
      [ "$drop" = 1 ] || printf '%s\n' "$line"
      continue
    fi
    drop=0
    file=${line%%:*}
    if [[ $file == *.go && -f $file ]] && grep -qE '^// Code generated .* DO NOT EDIT\.$' "$file"; then
      drop=1
      continue
    fi
    printf '%s\n' "$line"
  done <<<"$out"
)
if [ -n "$kept" ]; then
  echo "$kept"
  echo "staticcheck $(bin/staticcheck -version | sed 's/^staticcheck //'): $(grep -c $'^[^\t]' <<<"$kept") findings"
  exit 1
fi
if [ "$rc" != 0 ] && [ -z "$out" ]; then
  echo "staticcheck -merge exited $rc"
  exit "$rc"
fi
echo "staticcheck $(bin/staticcheck -version | sed 's/^staticcheck //'): no findings ($(grep -c $'^[^\t]' <<<"$out" || true) in generated files dropped)"
