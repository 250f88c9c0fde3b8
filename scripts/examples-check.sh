#!/usr/bin/env bash
# Every Terraform example under examples/ must be formatted and pass
# `terraform validate` against the provider built from this tree.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
if [ -n "${MLPLATFORM_BIN:-}" ] && [ -x "$MLPLATFORM_BIN/terraform-provider-mlplatform" ]; then
  cp "$MLPLATFORM_BIN/terraform-provider-mlplatform" "$tmp/bin/" # built by make test
else
  go build -o "$tmp/bin/terraform-provider-mlplatform" .
fi
cat >"$tmp/terraformrc" <<RC
provider_installation {
  dev_overrides {
    "mlplatform/mlplatform" = "$tmp/bin"
    # snippets for the docs carry no required_providers block
    "hashicorp/mlplatform"  = "$tmp/bin"
  }
  direct {}
}
RC
export TF_CLI_CONFIG_FILE="$tmp/terraformrc" CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1

dirs=()
for d in examples modules; do [ -d "$d" ] && dirs+=("$d"); done
if ! unformatted=$(terraform fmt -check -recursive "${dirs[@]}" 2>&1); then
  echo "terraform fmt needed:" >&2; echo "$unformatted" >&2; exit 1
fi
failed=0
n=0
# Module examples call their module by a relative path: keep modules/ whole.
if [ -d modules ]; then mkdir -p "$tmp/ex" && cp -r modules "$tmp/ex/"; fi
while IFS= read -r dir; do
  case "$dir" in examples/pulumi*) continue ;; esac
  n=$((n + 1))
  # Each example is validated in a copy: no .terraform or lock file is left behind.
  work="$tmp/ex/$dir"
  mkdir -p "$work"
  cp -r "$dir"/. "$work"/
  # A folder that calls modules installs them first (local paths: offline).
  if out=$(cd "$work" && if grep -qs '^module "' ./*.tf; then terraform get -no-color 2>&1 >/dev/null || exit 1; fi &&
    terraform validate -no-color 2>&1); then
    echo "ok      $dir"
  else
    echo "FAILED  $dir"; echo "$out" | sed 's/^/        /'
    failed=$((failed + 1))
  fi
done < <(find "${dirs[@]}" -name '*.tf' -printf '%h\n' | sort -u)
echo "$((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
