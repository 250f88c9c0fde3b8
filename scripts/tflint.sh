#!/usr/bin/env bash
# Lints the Terraform examples and modules with tflint and its bundled
# terraform ruleset (recommended preset). tflint is built from source once
# with `go install` and cached in the user's cache directory (override with
# TFLINT_DIR); the bundled ruleset needs no plugin download.
#
# Usage: scripts/tflint.sh
set -euo pipefail

version="${TFLINT_VERSION:-v0.55.1}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${TFLINT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mlplatform/tflint-$version}"
bin="$dir/tflint"

if [[ ! -x "$bin" ]]; then
	echo "building tflint $version into $dir (takes a few minutes, once)" >&2
	mkdir -p "$dir"
	GOBIN="$dir" GOFLAGS=-mod=mod GOWORK=off go install "github.com/terraform-linters/tflint@$version" >&2
fi

cd "$root"
config="$root/.tflint.hcl"
dirs=()
while IFS= read -r d; do
	case "$d" in examples/pulumi*) continue ;; esac
	dirs+=("$d")
done < <(find examples modules -name '*.tf' -exec dirname {} \; 2>/dev/null | sort -u)

failed=0
for d in "${dirs[@]}"; do
	if out=$("$bin" --config "$config" --chdir "$d" --format compact 2>&1); then
		echo "ok      $d"
	else
		echo "FAILED  $d"
		echo "$out" | sed 's/^/        /'
		failed=$((failed + 1))
	fi
done
if [[ $failed -gt 0 ]]; then
	echo "tflint: $failed of ${#dirs[@]} folders have findings" >&2
	exit 1
fi
echo "tflint: ${#dirs[@]} folders clean"
