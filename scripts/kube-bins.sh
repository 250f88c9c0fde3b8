#!/usr/bin/env bash
# Builds the real Kubernetes control plane the tests run, once: kube-apiserver
# and kube-scheduler (k8s.io/kubernetes v1.34.4, scripts/kube/k8s) and etcd
# (v3.6.4, scripts/kube/etcd), from the Go module proxy at the versions
# those tools modules pin. The binaries are cached in the user's cache
# directory, shared by every clone on the machine (override with
# KUBE_BIN_DIR); when they are there for the same go.sum files, this
# script does nothing. The first build takes about 12 minutes on two cores.
#
# Usage: scripts/kube-bins.sh        # prints the directory of the binaries
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
stamp_want="$(cat "$root/scripts/kube/k8s/go.sum" "$root/scripts/kube/etcd/go.sum" | sha256sum | cut -c1-16)"
dir="${KUBE_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mlplatform/kube-v1.34.4}"
stamp="$dir/.stamp"

if [[ -x "$dir/kube-apiserver" && -x "$dir/kube-scheduler" && -x "$dir/etcd" && -f "$stamp" && "$(cat "$stamp")" == "$stamp_want" ]]; then
	echo "$dir"
	exit 0
fi

mkdir -p "$dir"
echo "building kube-apiserver, kube-scheduler and etcd into $dir (about 12 minutes the first time)" >&2
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
(
	cd "$root/scripts/kube/etcd"
	go build -trimpath -ldflags "-s -w" -o "$dir/etcd.tmp" go.etcd.io/etcd/server/v3 >&2
)
(
	cd "$root/scripts/kube/k8s"
	go build -trimpath -ldflags "-s -w" -o "$dir/kube-scheduler.tmp" k8s.io/kubernetes/cmd/kube-scheduler >&2
	go build -trimpath -ldflags "-s -w" -o "$dir/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver >&2
)
for b in etcd kube-scheduler kube-apiserver; do mv "$dir/$b.tmp" "$dir/$b"; done
echo "$stamp_want" >"$stamp"
echo "$dir"
