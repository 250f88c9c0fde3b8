#!/usr/bin/env bash
# `make test`: static checks, unit tests, acceptance tests against moto through
# the real Terraform CLI, the Pulumi engine end to end, docs freshness, and the
# guides' shell blocks run as written.
#
# Each step's output is kept aside: a step that passes prints one result line
# (and, for some, its summary); a step that fails prints its whole output and
# ends the run with its exit status. MAKE_TEST_VERBOSE=1 prints everything.
# The run ends with a table: each step, its wall time, what it counted
# (tests, checks), and the total.
#
# The binaries are built once (step build) and every later step uses them.
# Go tests run in one `go test` over every package: acceptance tests are
# parallel (acctest.Setup gives each its own emulator from a pool), so
# MAKE_TEST_PARALLEL tests of a package run at once (default 6: they
# mostly wait on the emulator, Terraform and the Pulumi engine) and
# MAKE_TEST_PACKAGES test binaries at once (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
# Build and test with the toolchain go.mod names (a Go release with the
# fixes this code needs; the go command fetches it from the module proxy
# where the machine's Go is older). A Go whose go.env says
# GOTOOLCHAIN=local would otherwise ignore that line.
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
start=$(date +%s)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
table=()

# step ID SUMMARY COMMAND...: run COMMAND; SUMMARY is an extended regular
# expression selecting the lines of its output shown on success ("" for none).
step() {
  local id=$1 summary=$2 t0 rc
  shift 2
  t0=$(date +%s)
  if [ "${MAKE_TEST_VERBOSE:-}" = 1 ]; then
    echo "== $id"
    "$@" 2>&1 | tee "$logs/$id.log"
    table+=("$(printf '%-18s %6ss  %s' "$id" "$(($(date +%s) - t0))" "$(counted "$id")")")
    return
  fi
  if "$@" >"$logs/$id.log" 2>&1; then
    printf 'ok    %-28s %5ss\n' "$id" "$(($(date +%s) - t0))"
    if [ -n "$summary" ]; then grep -E "$summary" "$logs/$id.log" | sed 's/^/      /' || true; fi
    table+=("$(printf '%-18s %6ss  %s' "$id" "$(($(date +%s) - t0))" "$(counted "$id")")")
  else
    rc=$?
    printf 'FAIL  %-28s %5ss (exit %d)\n' "$id" "$(($(date +%s) - t0))" "$rc"
    cat "$logs/$id.log"
    exit "$rc"
  fi
}

# together ID SUMMARY COMMAND...: start step ID in the background;
# joined ID SUMMARY: wait for it and report it as step does.
together() {
  local id=$1
  shift 2
  (
    t0=$(date +%s)
    rc=0
    "$@" >"$logs/$id.log" 2>&1 || rc=$?
    echo "$rc $(($(date +%s) - t0))" >"$logs/$id.status.tmp"
    mv "$logs/$id.status.tmp" "$logs/$id.status"
  ) &
  eval "pid_${id//-/_}=$!"
}
joined() {
  local id=$1 summary=$2 pidvar rc wall
  pidvar="pid_${id//-/_}"
  wait "${!pidvar}" || true
  read -r rc wall <"$logs/$id.status"
  if [ "${MAKE_TEST_VERBOSE:-}" = 1 ]; then echo "== $id"; cat "$logs/$id.log"; fi
  if [ "$rc" = 0 ]; then
    printf 'ok    %-28s %5ss (beside others)\n' "$id" "$wall"
    if [ -n "$summary" ]; then grep -E "$summary" "$logs/$id.log" | sed 's/^/      /' || true; fi
    table+=("$(printf '%-18s %6ss  %s' "$id" "$wall" "$(counted "$id") (beside others)")")
  else
    printf 'FAIL  %-28s %5ss (exit %d)\n' "$id" "$wall" "$rc"
    cat "$logs/$id.log"
    exit "$rc"
  fi
}

# counted ID: what step ID counted, from its log: the go tests' counts, a
# closing "N passed, N failed" line, or the number of "ok" lines (checks).
counted() {
  local log=$logs/$1.log line n
  if [ -f "$logs/$1.counts" ]; then
    read -r p f k <"$logs/$1.counts"
    echo "$p passed, $f failed, $k skipped"
    return
  fi
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 || true)
  if [ -n "$line" ]; then echo "$line"; return; fi
  n=$(grep -cE '^ok ' "$log" || true)
  if [ "${n:-0}" -gt 0 ]; then echo "$n checks passed"; else echo "-"; fi
}

gofmt_check() {
  local files out
  files=$(git ls-files '*.go') || return 1
  if [ -z "$files" ]; then echo "no Go files found"; return 1; fi
  if ! out=$(gofmt -l $files 2>&1); then echo "$out"; return 1; fi
  if [ -n "$out" ]; then echo "gofmt needed:"; echo "$out"; return 1; fi
}
step gofmt "" gofmt_check

# go-nvml's cgo preamble uses declarations NVML marks deprecated: the
# compiler's warnings about them are not ours to fix.
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -Wno-deprecated-declarations"

# Built once: the binaries of make build in bin/, and in bin/test the node
# player's hwprobe (test build: go-nvml's mock GPUs, fixed machine
# descriptions), the Pulumi plugin alone in a folder (for the engine's
# PATH), the emulator and the go test summary. The steps after this one
# use them (MLPLATFORM_BIN, ACCTEST_HWPROBE, ACCTEST_PULUMI_PLUGIN_DIR).
build_all() {
  local rc=0 pid
  mkdir -p bin/test/pulumi
  # Side by side: most of a warm build is linking.
  { go build -tags hwprobe_nvmlmock -o bin/test/hwprobe ./hwprobe/cmd/hwprobe &&
    go build -o bin/test/ ./acctest/cmd/emulator ./scripts/gotest-summary; } &
  pid=$!
  make --no-print-directory -j2 build || rc=$?
  wait "$pid" || rc=$?
  ln -sf ../../pulumi-resource-mlplatform bin/test/pulumi/pulumi-resource-mlplatform
  return "$rc"
}
step build "" build_all
export MLPLATFORM_BIN=$PWD/bin ACCTEST_HWPROBE=$PWD/bin/test/hwprobe ACCTEST_PULUMI_PLUGIN_DIR=$PWD/bin/test/pulumi

# hwprobe's test-only NVML backend and machine descriptions build only with
# their tag: vet that build too.
step go-vet "" sh -c 'go vet ./... && go vet -tags hwprobe_nvmlmock ./hwprobe/cmd/hwprobe'
# staticcheck (pinned in scripts/tools/go.mod) over the hand-written code,
# hwprobe's tagged build included: the part of make lint the steps gofmt
# and go-vet do not do.
step staticcheck '^staticcheck ' bash scripts/staticcheck.sh
# govulncheck (pinned in scripts/tools/go.mod) against a database built
# offline from a pinned golang.org/x/vulndb module: a vulnerability our code
# reaches fails the run, with govulncheck's report of it.
step vulncheck '^(govulncheck|This scan|note)' bash scripts/govulncheck.sh

if [ -f scripts/pulumi-cli.sh ]; then
  step pulumi-cli "" bash scripts/pulumi-cli.sh # built once, cached
  PULUMI_CLI=$(tail -n 1 "$logs/pulumi-cli.log")
  export PULUMI_CLI
fi
step kube-bins "" bash scripts/kube-bins.sh # kube-apiserver, kube-scheduler, etcd: built once, cached
KUBE_BIN_DIR=$(tail -n 1 "$logs/kube-bins.log")
export KUBE_BIN_DIR

# Unit and acceptance tests (TF_ACC=1: moto + Terraform CLI), every package
# in one go test, then hwprobe's command with its test tag; one line per
# package, failed tests in full, the counts. The events stay in
# bin/test/go-test.json, to see where the time went.
go_tests() {
  local tagged=$logs/go-test-tagged.json
  {
    # hwprobe's command with its test tag, beside the rest (its own file:
    # two JSON streams on one pipe could interleave).
    go test -json -count=1 -tags hwprobe_nvmlmock ./hwprobe/cmd/hwprobe >"$tagged" 2>&1 &
    pid=$!
    # The longest packages first (go test starts them in this order);
    # ./... brings every other one, each once.
    TF_ACC=1 go test -json -count=1 -timeout 40m -p "${MAKE_TEST_PACKAGES:-3}" -parallel "${MAKE_TEST_PARALLEL:-6}" \
      ./acctest/conformance ./provider ./pulumi ./... || echo "go test exited $?" >"$logs/go-test.failed"
    wait "$pid" || echo "go test (hwprobe_nvmlmock) exited $?" >>"$logs/go-test.failed"
    cat "$tagged"
  } | bin/test/gotest-summary -slowest 15 -counts "$logs/go-test.counts" -json bin/test/go-test.json || return $?
  # A go test that failed where no test did (the summary saw no failure).
  if [ -f "$logs/go-test.failed" ]; then cat "$logs/go-test.failed"; return 1; fi
}
step go-test '^(ok|FAIL|---|[0-9]+ passed)' go_tests

# These four share nothing they write (each works in a folder of its own;
# docs-check rewrites docs/ alone): side by side.
together examples '^[0-9]+ passed' bash scripts/examples-check.sh
together tflint '^tflint:' bash scripts/tflint.sh
together pulumi-sdks '' bash scripts/sdk-check.sh
together docs '' bash scripts/docs-check.sh
joined examples '^[0-9]+ passed'
joined tflint '^tflint:'
joined pulumi-sdks ''
joined docs ''
step guides '^guide-check:' bash scripts/guide-check.sh # every guide's shell blocks, run as written
step demo 'done in' bash scripts/demo.sh # make demo, so it cannot rot: it fails when any act does

echo
echo "step                 wall  counted"
for r in "${table[@]}"; do echo "$r"; done
printf '%-18s %6ss\n' total "$(($(date +%s) - start))"
echo "make test passed in $(($(date +%s) - start))s"
