#!/usr/bin/env bash
# Builds the Pulumi CLI used by the end-to-end tests from source, once.
#
# The CLI is built from github.com/pulumi/pulumi/pkg/v3 (cmd/pulumi) inside a
# scratch module, so it needs nothing but the Go toolchain and the module
# proxy. The binary is cached in the user's cache directory, shared by every
# clone on the machine (override with PULUMI_CLI_DIR); when it is already
# there, this script does nothing.
#
# Usage: scripts/pulumi-cli.sh        # prints the path of the CLI binary
set -euo pipefail

version="${PULUMI_CLI_VERSION:-v3.200.0}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${PULUMI_CLI_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mlplatform/pulumi-$version/bin}"
bin="$dir/pulumi"
stamp="$dir/.version"

if [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$dir"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

echo "building pulumi $version into $dir (takes a few minutes)" >&2
(
	cd "$scratch"
	export GOFLAGS=-mod=mod GOWORK=off
	go mod init scratch >/dev/null 2>&1
	go get "github.com/pulumi/pulumi/pkg/v3@$version" >&2
	go build -trimpath \
		-ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$version" \
		-o "$bin.tmp" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi >&2
)
mv "$bin.tmp" "$bin"
echo "$version" >"$stamp"
echo "$bin"
