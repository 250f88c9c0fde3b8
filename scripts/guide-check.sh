#!/usr/bin/env bash
# Runs the shell blocks of the guides as written, against the local AWS
# emulator, with the provider built from this tree. Every ```sh, ```shell and
# ```bash block of a guide runs in order, in one bash process from the
# repository root (so `cd` carries over), under set -e. An HTML comment right
# before a block says how to treat it:
#
#   <!-- guide-check: skip (why) -->        not run, and reported as such (it needs a real AWS account, installs into your home, ...)
#   <!-- guide-check: expect "TEXT" -->     must pass and print TEXT
#   <!-- guide-check: fails "TEXT" -->      must fail and print TEXT
#
# /tmp/quickstart in a block is replaced by a scratch folder. The emulator's
# environment is what `make emulator` prints.
#
# Usage: scripts/guide-check.sh [docs/guides/getting-started.md ...]
# (default: every guide under docs/guides with a shell block)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
guides=("$@")
if [ ${#guides[@]} -eq 0 ]; then
  for g in docs/guides/*.md; do
    if grep -qE '^```(sh|shell|bash)$' "$g"; then guides+=("$g"); fi
  done
fi

work=$(mktemp -d)
emu_pid=""
cleanup() {
  if [ -n "$emu_pid" ]; then kill "$emu_pid" 2>/dev/null || true; wait "$emu_pid" 2>/dev/null || true; fi
  # A block may run terraform init inside the tree (module examples).
  find "$root/modules" "$root/examples" \( -name .terraform -o -name .terraform.lock.hcl \) -newer "$work" -prune -exec rm -rf {} + 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

version=0.1.0
mirror="$work/mirror/registry.terraform.io/mlplatform/mlplatform/$version/$(go env GOOS)_$(go env GOARCH)"
mkdir -p "$mirror"
# make test built them already (MLPLATFORM_BIN): take those.
if [ -n "${MLPLATFORM_BIN:-}" ] && [ -x "$MLPLATFORM_BIN/terraform-provider-mlplatform" ] && [ -x "$MLPLATFORM_BIN/test/emulator" ]; then
  cp "$MLPLATFORM_BIN/terraform-provider-mlplatform" "$mirror/terraform-provider-mlplatform_v$version"
  cp "$MLPLATFORM_BIN/test/emulator" "$work/emulator"
else
  go build -o "$mirror/terraform-provider-mlplatform_v$version" -ldflags "-X main.version=$version" .
  go build -o "$work/emulator" ./acctest/cmd/emulator
fi
cat >"$work/terraformrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$work/mirror"
    include = ["mlplatform/mlplatform"]
  }
  direct {
    exclude = ["mlplatform/mlplatform"]
  }
}
RC

failed=0 ran=0 skipped=0
for guide in "${guides[@]}"; do
  # A fresh emulator per guide.
  if [ -n "$emu_pid" ]; then kill "$emu_pid" 2>/dev/null || true; wait "$emu_pid" 2>/dev/null || true; fi
  rm -f "$work/endpoint"
  "$work/emulator" --quiet --ready-file "$work/endpoint" >"$work/emulator.log" 2>&1 &
  emu_pid=$!
  for _ in $(seq 1 120); do [ -s "$work/endpoint" ] && break; sleep 0.5; done
  [ -s "$work/endpoint" ] || { cat "$work/emulator.log"; echo "guide-check: the emulator did not start" >&2; exit 1; }

  # Split the guide into blocks: blocks/N.sh and blocks/N.mode ("run",
  # "skip", "expect TEXT" or "fails TEXT").
  rm -rf "$work/blocks" "$work/quickstart"
  mkdir -p "$work/blocks" "$work/quickstart"
  awk -v dir="$work/blocks" '
    /^<!-- guide-check: / { mode = $0; sub(/^<!-- guide-check: /, "", mode); sub(/ -->$/, "", mode); next }
    /^```(sh|shell|bash)$/ { n++; inblock = 1; m = (mode == "" ? "run" : mode); print m > (dir "/" n ".mode"); close(dir "/" n ".mode"); mode = ""; next }
    /^```$/ && inblock { inblock = 0; close(dir "/" n ".sh"); next }
    inblock { print > (dir "/" n ".sh"); next }
    /^[^[:space:]]/ && !/^<!--/ { mode = "" }
  ' "$guide"
  n=$(ls "$work/blocks"/*.sh 2>/dev/null | wc -l)
  [ "$n" -gt 0 ] || { echo "guide-check: no sh blocks in $guide" >&2; exit 1; }

  # One script for the guide: each block's output is kept; a marker line
  # records its exit status. Blocks run in one shell so cd carries over.
  script="$work/guide.sh"
  : >"$script"
  for i in $(seq 1 "$n"); do
    mode=$(cat "$work/blocks/$i.mode")
    case "$mode" in skip*) continue ;; esac
    {
      echo "( set -e"
      sed "s|/tmp/quickstart|$work/quickstart|g" "$work/blocks/$i.sh"
      echo ") >\"$work/blocks/$i.out\" 2>&1; echo \$? >\"$work/blocks/$i.rc\""
    } >>"$script"
  done
  (
    cd "$root"
    export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=me-central-1
    export AWS_EC2_METADATA_DISABLED=true AWS_ENDPOINT_URL="$(cat "$work/endpoint")" MLPLATFORM_POLL_INTERVAL=500ms
    # The Pulumi CLI make test built, when there is one.
    if [ -n "${PULUMI_CLI:-}" ]; then PATH="$(dirname "$PULUMI_CLI"):$PATH"; fi
    export TF_CLI_CONFIG_FILE="$work/terraformrc" CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 TF_INPUT=0
    unset AWS_PROFILE AWS_SESSION_TOKEN
    bash "$script"
  )
  # Judge each block.
  for i in $(seq 1 "$n"); do
    mode=$(cat "$work/blocks/$i.mode")
    case "$mode" in skip*) echo "not run $guide block $i ${mode#skip }"; skipped=$((skipped + 1)); continue ;; esac
    ran=$((ran + 1))
    rc=$(cat "$work/blocks/$i.rc" 2>/dev/null || echo missing)
    text=""
    case "$mode" in expect*|fails*) text=${mode#* \"}; text=${text%\"} ;; esac
    ok=1
    case "$mode" in
      fails*) [ "$rc" != 0 ] && [ "$rc" != missing ] || ok=0 ;;
      *) [ "$rc" = 0 ] || ok=0 ;;
    esac
    # Terraform colours its output when it is not told otherwise.
    sed 's/\x1b\[[0-9;]*m//g' "$work/blocks/$i.out" >"$work/blocks/$i.txt" 2>/dev/null || : >"$work/blocks/$i.txt"
    if [ -n "$text" ] && ! grep -qF -- "$text" "$work/blocks/$i.txt"; then ok=0; fi
    if [ "$ok" = 1 ]; then
      echo "ok      $guide block $i ($mode)"
    else
      echo "FAILED  $guide block $i ($mode): exit $rc"
      sed 's/^/        /' "$work/blocks/$i.sh"
      echo "        --- output:"
      sed 's/^/        /' "$work/blocks/$i.txt"
      failed=$((failed + 1))
    fi
  done
done
[ "$failed" -eq 0 ] && echo "guide-check: ${#guides[@]} guides, $ran blocks run and behaved as their guide says, $skipped not run (reasons above)"
[ "$failed" -eq 0 ]
