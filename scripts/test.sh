#!/usr/bin/env bash
# `make test`: static checks, unit tests, acceptance tests against moto through
# the real Terraform CLI, the Pulumi engine end to end, docs freshness, and the
# guides' shell blocks run as written.
#
# Each step's output is kept aside: a step that passes prints one result line
# (and, for some, its summary); a step that fails prints its whole output and
# ends the run with its exit status. MAKE_TEST_VERBOSE=1 prints everything.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# step ID SUMMARY COMMAND...: run COMMAND; SUMMARY is an extended regular
# expression selecting the lines of its output shown on success ("" for none).
step() {
  local id=$1 summary=$2 t0 rc
  shift 2
  t0=$(date +%s)
  if [ "${MAKE_TEST_VERBOSE:-}" = 1 ]; then
    echo "== $id"
    "$@" 2>&1 | tee "$logs/$id.log"
    return
  fi
  if "$@" >"$logs/$id.log" 2>&1; then
    printf 'ok    %-28s %5ss\n' "$id" "$(($(date +%s) - t0))"
    if [ -n "$summary" ]; then grep -E "$summary" "$logs/$id.log" | sed 's/^/      /' || true; fi
  else
    rc=$?
    printf 'FAIL  %-28s %5ss (exit %d)\n' "$id" "$(($(date +%s) - t0))" "$rc"
    cat "$logs/$id.log"
    exit "$rc"
  fi
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
step go-vet "" go vet ./...

if [ -f scripts/pulumi-cli.sh ]; then
  step pulumi-cli "" bash scripts/pulumi-cli.sh # built once, cached
  PULUMI_CLI=$(tail -n 1 "$logs/pulumi-cli.log")
  export PULUMI_CLI
fi

# Unit and acceptance tests (TF_ACC=1: moto + Terraform CLI): one line per
# package that has tests.
#
# The provider package's acceptance tests and the conformance suite run one
# test after another against their emulator and are mostly waiting (on the
# emulator, Terraform, the Pulumi engine and the polls): each is split in two
# test processes, each with its own emulator, that run beside the other
# packages. One pattern selects a split's tests in one process (-run) and
# drops them from the other (-skip), so every test runs exactly once:
#  - provider: the serving endpoint and CPU footprint tests, and the rest;
#  - conformance: the Pulumi half of every scenario, and the Terraform half
#    with the layering tests (a scenario is named resource/case, which
#    TestConformance enforces, so its halves are TestConformance/*/*/pulumi
#    and .../terraform).
go_tests() {
  local split='^TestAcc(ServingEndpoint|CPUFootprint)_' conf=./acctest/conformance/ rc=0 pkgs p pids=()
  pkgs=$(go list ./... | grep -v '/acctest/conformance$') || return 1
  TF_ACC=1 go test -count=1 -timeout 40m -skip "$split" $pkgs >"$logs/go-test-1.out" 2>&1 &
  pids+=($!)
  TF_ACC=1 go test -count=1 -timeout 40m -run "$split" ./provider/ >"$logs/go-test-2.out" 2>&1 &
  pids+=($!)
  TF_ACC=1 go test -count=1 -timeout 40m -run 'TestConformance/.*/.*/pulumi' "$conf" >"$logs/go-test-3.out" 2>&1 &
  pids+=($!)
  TF_ACC=1 go test -count=1 -timeout 40m -skip 'TestConformance/.*/.*/pulumi' "$conf" >"$logs/go-test-4.out" 2>&1 &
  pids+=($!)
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  cat "$logs"/go-test-[1-4].out
  return "$rc"
}
step go-test '^(ok|FAIL|---)' go_tests
# hwprobe's test-only NVML backend (go-nvml's mock servers) builds only with
# its tag: vet and test that build too.
step hwprobe-nvmlmock '^(ok|FAIL|---)' sh -c 'go vet -tags hwprobe_nvmlmock ./hwprobe/... && go test -count=1 -tags hwprobe_nvmlmock ./hwprobe/...'

step examples '^[0-9]+ passed' bash scripts/examples-check.sh
step tflint '^tflint:' bash scripts/tflint.sh
step pulumi-sdks '' bash scripts/sdk-check.sh
step docs '' bash scripts/docs-check.sh
step guides '^guide-check:' bash scripts/guide-check.sh # every guide's shell blocks, run as written
step demo 'done in' bash scripts/demo.sh # make demo, so it cannot rot: it fails when any act does

echo "make test passed in $(($(date +%s) - start))s"
