#!/usr/bin/env bash
# device-amx-check.sh: run hwprobe's AMX kernels on a CPU with AMX once:
# their correctness tests, a sweep of blockings, the bf16 and int8 GEMM
# and int8 MLP benchmarks, and PyTorch's CPU matrix products (oneDNN,
# which uses AMX) in the same run as the reference.
#
#   scripts/device-amx-check.sh [HWPROBE] [BENCHTEST] [OUTDIR]
#
# HWPROBE defaults to bin/hwprobe (make build-hwprobe), BENCHTEST to
# bin/benchtest (go test -c -o bin/benchtest ./hwprobe/bench), OUTDIR to
# $OUT or ./amx-check-out; GOBENCH to bin/gobench (go build -o bin/gobench
# ./scripts/bench-hwprobe/gobench). ROUNDS interleaved rounds (default 2)
# of hwprobe against PyTorch's CPU GEMMs and ONNX Runtime's MLP (Python:
# scripts/bench-hwprobe/ort/mlp.py).
set -u
HW=${1:-bin/hwprobe}
BT=${2:-bin/benchtest}
O=${3:-${OUT:-./amx-check-out}}
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
mkdir -p "$O"
step() { printf '\n===== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "cpu"
grep -m1 'model name' /proc/cpuinfo
nproc
grep -o -w -E 'amx_[a-z0-9]+|avx512_bf16|avx512_vnni' /proc/cpuinfo | sort | uniq -c
uname -r

step "the bench package's tests (the AMX ones run only here)"
# From the package's folder: some tests read its testdata and sources.
bt=$(readlink -f "$BT")
(cd hwprobe/bench 2>/dev/null; timeout 240 "$bt" -test.v) >"$O/tests.txt" 2>&1
echo "exit $?"
grep -E '^(--- FAIL|--- SKIP|FAIL|PASS|ok|panic)|amx_test|SIGILL|signal' "$O/tests.txt" | head -40
grep -c '^    --- PASS' "$O/tests.txt"

step "blocking sweep"
HWPROBE_AMX_SWEEP=${AMX_SWEEP:-2048,4096} timeout 240 "$bt" -test.run TestAMXSweep -test.v 2>&1 | grep -E 'SWEEP|caches|FAIL|ok|panic' | sed 's/^ *amx_test.go:[0-9]*: //'

step "hwprobe bench (every CPU benchmark), full then quick"
timeout 150 "$HW" bench --only 'cpu_*' --format json >"$O/cpu-full.json"
echo "exit $?"
timeout 60 "$HW" bench --quick --only 'cpu_*' --format table

torch_ref() {
timeout 180 env PYTHONUNBUFFERED=1 "$PY" - "$(nproc)" <<'PYEOF'
import sys, time, statistics
import torch
torch.set_num_threads(int(sys.argv[1]))
print("torch", torch.__version__, "threads", torch.get_num_threads())
print(torch.__config__.show().splitlines()[0:12])
try:
    print("onednn", torch.backends.mkldnn.is_available(), getattr(torch._C, "_onednn_version", lambda: "?")() if hasattr(torch._C, "_onednn_version") else "")
except Exception as e:
    print("onednn ?", e)
def rate(f, flops, reps=7):
    f(); f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    return flops / min(ts) / 1e9, flops / statistics.median(ts) / 1e9
for n in (2048, 4096):
    a = torch.randn(n, n).to(torch.bfloat16); b = torch.randn(n, n).to(torch.bfloat16)
    best, med = rate(lambda: torch.matmul(a, b), 2 * n**3)
    print("REF bf16 matmul n=%d: best %.0f median %.0f GFLOP/s" % (n, best, med))
    try:
        a8 = torch.randint(-128, 127, (n, n), dtype=torch.int8); b8 = torch.randint(-128, 127, (n, n), dtype=torch.int8)
        best, med = rate(lambda: torch._int_mm(a8, b8), 2 * n**3)
        print("REF int8 _int_mm n=%d: best %.0f median %.0f GOP/s" % (n, best, med))
    except Exception as e:
        print("REF int8 _int_mm n=%d: not run: %r" % (n, e))
    a = torch.randn(n, n); b = torch.randn(n, n)
    best, med = rate(lambda: torch.matmul(a, b), 2 * n**3)
    print("REF fp32 matmul n=%d: best %.0f median %.0f GFLOP/s" % (n, best, med))
PYEOF
echo "exit $?"
}

# Interleaved rounds, the same run: hwprobe's GEMMs (gobench, as make
# bench-hwprobe runs them) then PyTorch's; hwprobe's MLP then ONNX
# Runtime's (Python), fp32 and int8, batch 64 as make bench-hwprobe.
GB=${GOBENCH:-bin/gobench}
ORTPY=$(dirname "$0")/bench-hwprobe/ort/mlp.py
for ((r = 1; r <= ${ROUNDS:-2}; r++)); do
	step "round $r: GEMM, hwprobe then PyTorch"
	timeout 120 "$GB" --sgemm 2048,4096 --bf16 2048,4096 --int8 2048,4096 --triad=false | sed 's/^/HW /'
	torch_ref
	step "round $r: MLP, hwprobe then ONNX Runtime"
	for prec in fp32 int8; do
		flag=--mlp
		[ "$prec" = int8 ] && flag=--mlp8
		timeout 60 "$GB" --sgemm '' --triad=false "$flag" 64 | sed "s/^/HW $prec /"
		timeout 90 "$PY" "$ORTPY" 1024,1024,1024,1024 200 64 10 "$(nproc)" "$prec" | sed "s/^/REF $prec /"
	done
done
