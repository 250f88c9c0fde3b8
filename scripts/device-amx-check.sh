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
#
# ONLY=mlp runs the cpu step and then only the fp32 and int8 MLP rows
# (about 2 minutes): hwprobe's (GOBENCH, and GOBENCH_BASE when set: a
# gobench built from the baseline commit) against ONNX Runtime's, ROUNDS
# interleaved rounds (default 3; the order rotates each round), the fp32
# forward pass old against new in one process at 1 to $(nproc) threads
# (BENCHTEST's TestMLPCompare, when the binary has it), and a summary of
# the medians with old/new/ONNX Runtime ratios. Without python3 and
# onnxruntime the ONNX Runtime rows say "not run".
set -u
HW=${1:-bin/hwprobe}
BT=${2:-bin/benchtest}
O=${3:-${OUT:-./amx-check-out}}
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
mkdir -p "$O"
step() { printf '\n===== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

# mlp_only OUTDIR ROUNDS: the fp32 and int8 MLP rows only (ONLY=mlp).
# Each round runs, per precision, the baseline gobench (GOBENCH_BASE, when
# set), the new one (GOBENCH) and ONNX Runtime (Python), in an order that
# rotates from round to round; every line goes to OUTDIR/mlp.txt with the
# side and round in front, and the summary follows. Latency ratios are
# the other side's time over the first side's (above 1: the first is
# faster), throughput ratios the first side's over the other's.
mlp_only() {
	local o=$1 rounds=$2 gb=${GOBENCH:-bin/gobench} base=${GOBENCH_BASE:-} ortpy r prec flag i side bin ort=1 why
	local out=$o/mlp.txt sides=(new ort)
	ortpy=$(dirname "$0")/bench-hwprobe/ort/mlp.py
	[ -n "$base" ] && sides=(base new ort)
	step "MLP only: ${sides[*]}, $rounds interleaved rounds, $(nproc) threads (load: $(cut -d' ' -f1-3 /proc/loadavg))"
	for side in "$gb" ${base:+"$base"}; do
		[ -x "$side" ] || { echo "gobench not found: $side (go build -o $side ./scripts/bench-hwprobe/gobench)"; return 2; }
	done
	[ -n "$base" ] || echo "GOBENCH_BASE unset: no baseline rows"
	if [ -z "$PY" ] || ! why=$("$PY" -c 'import numpy, onnx, onnxruntime; print(onnxruntime.__version__)' 2>&1); then
		ort=0
		echo "ONNX Runtime (Python): not run: ${PY:-no python3}: $(printf '%s' "${why:-}" | tail -n1)"
	else
		echo "ONNX Runtime (Python) $why, $PY"
	fi
	: >"$out"
	for ((r = 1; r <= rounds; r++)); do
		step "MLP round $r"
		for prec in fp32 int8; do
			flag=--mlp
			[ "$prec" = int8 ] && flag=--mlp8
			for ((i = 0; i < ${#sides[@]}; i++)); do
				side=${sides[$(((i + r - 1) % ${#sides[@]}))]}
				case $side in
				base | new)
					bin=$gb
					[ "$side" = base ] && bin=$base
					timeout 60 "$bin" --sgemm '' --triad=false "$flag" 64 2>&1 | sed "s/^/side=$side prec=$prec round=$r /" | tee -a "$out"
					;;
				ort)
					if [ "$ort" = 1 ]; then
						timeout 90 "$PY" "$ortpy" 1024,1024,1024,1024 200 64 10 "$(nproc)" "$prec" 2>&1 | tail -n3 | sed "s/^/side=ort prec=$prec round=$r /" | tee -a "$out"
					fi
					;;
				esac
			done
		done
	done
	step "MLP fp32 in one process, old (the forward pass before the shared A and the wider GEMV, kept in the tests) against new: TestMLPCompare"
	if [ -x "$BT" ]; then
		local bt ths=1 n
		bt=$(readlink -f "$BT")
		n=$(nproc)
		for ((i = 2; i < n; i *= 2)); do ths=$ths,$i; done
		[ "$n" -gt 1 ] && ths=$ths,$n # 1, 2, 4, ... and every core
		(cd hwprobe/bench 2>/dev/null || exit; HWPROBE_MLP_COMPARE=$rounds HWPROBE_MLP_COMPARE_THREADS=$ths timeout 120 "$bt" -test.run 'TestMLPCompare$' -test.v 2>&1) >"$o/mlp-compare.txt"
		grep MLPCOMPARE "$o/mlp-compare.txt" || { echo "no MLPCOMPARE lines (a test binary without TestMLPCompare?):"; tail -n5 "$o/mlp-compare.txt"; }
		awk '
			function get(line, k,   n, i, a) { n = split(line, a, " "); for (i = 1; i <= n; i++) if (index(a[i], k "=") == 1) return substr(a[i], length(k) + 2); return "" }
			function median(arr, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (arr[j] < arr[i]) { t = arr[i]; arr[i] = arr[j]; arr[j] = t } return (n % 2) ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2 }
			/^MLPCOMPARE/ { th = get($0, "threads"); im = get($0, "impl"); k = ++n[th, im]; p[th, im, k] = get($0, "p50_ms"); b[th, im, k] = get($0, "thr64_best"); if (!(th in seen)) { seen[th] = 1; order[++nt] = th } }
			END {
				for (i = 1; i <= nt; i++) {
					th = order[i]
					for (s = 1; s <= 2; s++) { im = (s == 1) ? "old" : "new"; for (k = 1; k <= n[th, im]; k++) { x[k] = p[th, im, k]; y[k] = b[th, im, k] } m50[im] = median(x, n[th, im]); mb[im] = median(y, n[th, im]) }
					printf "  threads %2d: batch-1 p50 old %.4f new %.4f ms (old/new %.2f); batch-64 best old %.0f new %.0f samples/s (new/old %.2f)\n", th, m50["old"], m50["new"], m50["old"] / m50["new"], mb["old"], mb["new"], mb["new"] / mb["old"]
				}
			}' "$o/mlp-compare.txt"
	else
		echo "not run: no test binary at $BT (go test -c -o $BT ./hwprobe/bench)"
	fi

	step "MLP summary (medians over rounds; per-round ratios in brackets)"
	awk -v rounds="$rounds" -v ort="$ort" '
		function get(line, k,   n, i, a) { n = split(line, a, " "); for (i = 1; i <= n; i++) if (index(a[i], k "=") == 1) return substr(a[i], length(k) + 2); return "" }
		function median(arr, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (arr[j] < arr[i]) { t = arr[i]; arr[i] = arr[j]; arr[j] = t } return (n % 2) ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2 }
		get($0, "check") == "ok" { s = get($0, "side"); p = get($0, "prec"); r = get($0, "round") + 0; p50[p, s, r] = get($0, "p50_ms") + 0; thr[p, s, r] = get($0, "thr") + 0; have[p, s]++; kern[p, s] = get($0, "kernel") " " get($0, "version") }
		/check=/ && get($0, "check") != "ok" { print "  not measured: " $0 }
		function ratios(p, a, b, label,   r, n, x, y, lst, tl, m50, mt) {
			if (!have[p, a] || !have[p, b]) { printf "  %s %s: not run (no %s rows)\n", p, label, (!have[p, a]) ? a : b; return }
			n = 0; lst = ""; tl = ""
			for (r = 1; r <= rounds; r++) if ((p, a, r) in thr && (p, b, r) in thr) {
				n++; x[n] = p50[p, b, r] / p50[p, a, r]; y[n] = thr[p, a, r] / thr[p, b, r]
				lst = lst sprintf(" %.2f", x[n]); tl = tl sprintf(" %.2f", y[n])
			}
			if (!n) { printf "  %s %s: no round with both\n", p, label; return }
			printf "  %s %s: p50 %.2f [%s ]  batch-64 throughput %.2f [%s ]\n", p, label, median(x, n), lst, median(y, n), tl
		}
		END {
			split("fp32 int8", ps, " "); split("base new ort", ss, " ")
			for (i = 1; i <= 2; i++) {
				p = ps[i]
				for (j = 1; j <= 3; j++) {
					s = ss[j]; if (!have[p, s]) continue
					n = 0; for (r = 1; r <= rounds; r++) if ((p, s, r) in thr) { n++; a[n] = p50[p, s, r]; b[n] = thr[p, s, r] }
					printf "  %s %-4s p50 %.4f ms  batch-64 %.0f samples/s  (%d rounds; %s)\n", p, s, median(a, n), median(b, n), n, kern[p, s]
				}
				ratios(p, "new", "base", "new/base")
				ratios(p, "new", "ort", "new/ort ")
				ratios(p, "base", "ort", "base/ort")
			}
			if (!ort) print "  ONNX Runtime: not run"
		}' "$out"
}

step "cpu"
grep -m1 'model name' /proc/cpuinfo
nproc
grep -o -w -E 'amx_[a-z0-9]+|avx512_bf16|avx512_vnni' /proc/cpuinfo | sort | uniq -c
uname -r

case ${ONLY:-} in
"") ;;
mlp)
	mlp_only "$O" "${ROUNDS:-3}"
	exit $?
	;;
*)
	echo "ONLY=$ONLY: unknown (known: mlp)"
	exit 2
	;;
esac

step "the bench package's tests (the AMX ones run only here)"
# From the package's folder: some tests read its testdata and sources.
bt=$(readlink -f "$BT")
# shellcheck disable=SC2164 # without the folder the tests run from here, as before
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
