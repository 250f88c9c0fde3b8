#!/usr/bin/env bash
# Fails when docs/ differs from what tfplugindocs generates from the schema and
# examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r docs "$tmp/docs.before"
go generate . >/dev/null
if ! diff -r "$tmp/docs.before" docs >/dev/null; then
  diff -ru "$tmp/docs.before" docs | sed -n 1,60p
  echo "docs/ was stale: run 'make docs' and commit the result" >&2
  exit 1
fi
echo "docs/ is up to date"
# The registry's own checks: frontmatter, file names, layout.
if ! out=$(go tool tfplugindocs validate --provider-name mlplatform 2>&1); then
  echo "$out" | grep -v '\[DEBUG\]' | tail -n 20
  echo "tfplugindocs validate failed" >&2
  exit 1
fi
echo "tfplugindocs validate passed"
# Module READMEs: the inputs and outputs tables are generated from the
# modules' variables and outputs.
if [ -d modules ]; then
  go run ./scripts/moddoc -check
  echo "module READMEs are up to date"
fi
