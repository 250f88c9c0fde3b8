#!/usr/bin/env bash
# `make bench`: provider benchmarks, measured in one run on this machine.
#  1. GetProviderSchema served by a fresh provider server (Go benchmark).
#  2. Peak RSS of the provider process over a `terraform plan` of 100 lookups.
#  3. `terraform plan` wall time for 100 mlplatform_instance_types lookups
#     against 100 terraform_data resources (the core's floor), as a ratio.
# Targets: schema under 50 ms, peak RSS under 64 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
version=0.1.0
runs=${BENCH_RUNS:-3}

for tool in go terraform moto_server python3; do
  command -v "$tool" >/dev/null || { echo "bench: $tool not found" >&2; exit 2; }
done

work=$(mktemp -d)
emu_pid=""
cleanup() {
  if [ -n "$emu_pid" ]; then kill "$emu_pid" 2>/dev/null || true; wait "$emu_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "== GetProviderSchema (in process, fresh server each time)"
go test -run '^$' -bench 'BenchmarkGetProviderSchema' -benchmem -count 5 ./provider/ | tee "$work/schema.txt" | grep Benchmark
schema_ms=$(awk '/BenchmarkGetProviderSchema/ {print $3/1e6}' "$work/schema.txt" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')

echo
echo "== building the provider and the emulator"
os_arch="$(go env GOOS)_$(go env GOARCH)"
mirror="$work/mirror/registry.terraform.io/mlplatform/mlplatform/$version/$os_arch"
mkdir -p "$mirror"
go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$work/terraform-provider-mlplatform" . # as `make build` does
go build -o "$work/emulator" ./acctest/cmd/emulator
# The mirror holds a wrapper that runs the real provider and records its peak
# RSS (getrusage of the child) when it exits.
cat >"$mirror/terraform-provider-mlplatform_v$version" <<PY
#!/usr/bin/env python3
import os, signal, subprocess, sys
p = subprocess.Popen(["$work/terraform-provider-mlplatform"] + sys.argv[1:])
for s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(s, lambda n, f: p.send_signal(n))
_, status, ru = os.wait4(p.pid, 0)
with open("$work/rss.txt", "a") as f:
    f.write(f"{ru.ru_maxrss}\n")
sys.exit(os.waitstatus_to_exitcode(status))
PY
chmod +x "$mirror/terraform-provider-mlplatform_v$version"

"$work/emulator" --quiet --ready-file "$work/endpoint" >"$work/emulator.log" 2>&1 &
emu_pid=$!
for _ in $(seq 1 120); do [ -s "$work/endpoint" ] && break; sleep 0.5; done
[ -s "$work/endpoint" ] || { cat "$work/emulator.log"; echo "bench: the emulator did not start" >&2; exit 1; }
export AWS_ENDPOINT_URL=$(cat "$work/endpoint") AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=me-central-1
export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 TF_INPUT=0
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
export TF_CLI_CONFIG_FILE="$work/terraformrc"

mkdir -p "$work/lookups" "$work/floor"
{
  echo 'terraform {'
  echo '  required_providers {'
  echo '    mlplatform = { source = "mlplatform/mlplatform" }'
  echo '  }'
  echo '}'
  echo 'provider "mlplatform" { region = "me-central-1" }'
  for i in $(seq 1 100); do
    echo "data \"mlplatform_instance_types\" \"t$i\" {"
    echo "  min_gpu_count = $(( (i % 8) + 1 ))"
    echo "}"
  done
} >"$work/lookups/main.tf"
for i in $(seq 1 100); do
  echo "resource \"terraform_data\" \"t$i\" {"
  echo "  input = $i"
  echo "}"
done >"$work/floor/main.tf"
(cd "$work/lookups" && terraform init -no-color >/dev/null)
(cd "$work/floor" && terraform init -no-color >/dev/null)

plan_ms() { # dir -> wall ms of one plan
  local s e
  s=$(date +%s%N)
  (cd "$1" && terraform plan -no-color >/dev/null)
  e=$(date +%s%N)
  echo $(( (e - s) / 1000000 ))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo
echo "== terraform plan, $runs runs each, interleaved"
: >"$work/rss.txt"
plan_ms "$work/lookups" >/dev/null # warm-up: file cache, plugin start
plan_ms "$work/floor" >/dev/null
: >"$work/rss.txt"
for r in $(seq 1 "$runs"); do
  a=$(plan_ms "$work/lookups"); b=$(plan_ms "$work/floor")
  echo "run $r: 100 instance_types lookups ${a} ms, 100 terraform_data ${b} ms"
  echo "$a" >>"$work/a.txt"; echo "$b" >>"$work/b.txt"
done
a=$(median <"$work/a.txt"); b=$(median <"$work/b.txt")
echo "provider processes, peak RSS in KB: $(sort -n "$work/rss.txt" | tr "\n" " ")"
rss_kb=$(sort -n "$work/rss.txt" | tail -n 1)

echo
echo "== results (median of $runs)"
printf '%-52s %10s  %s\n' "measure" "value" "target"
printf '%-52s %8.2f ms  < 50 ms\n' "GetProviderSchema, fresh server" "$schema_ms"
printf '%-52s %7.1f MB  < 64 MB\n' "provider peak RSS over a 100-lookup plan" "$(echo "$rss_kb" | awk '{print $1/1024}')"
printf '%-52s %8d ms\n' "terraform plan, 100 mlplatform_instance_types" "$a"
printf '%-52s %8d ms\n' "terraform plan, 100 terraform_data (floor)" "$b"
printf '%-52s %9.2fx\n' "ratio lookups / floor" "$(awk -v a="$a" -v b="$b" 'BEGIN {print a/b}')"
