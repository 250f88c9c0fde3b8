#!/usr/bin/env bash
# Side-by-side check of hwprobe's CPU benchmarks against references built on
# this host, in one go on the same machine (`make bench-hwprobe`):
#   - hwprobe's built-in sgemm against OpenBLAS cblas_sgemm (a small C driver
#     linked with Debian's libopenblas-dev), at n = 2048 and 4096;
#   - hwprobe's STREAM triad against a C triad (gcc -O3 -march=native
#     -fopenmp) over arrays of the same length.
# It prints each figure and the ratios hwprobe/reference (best of the
# repetitions, and medians). Targets: sgemm >= 0.8x, triad >= 0.9x.
# Each comparison alternates the two sides for --rounds rounds (hwprobe,
# reference, hwprobe, ...) so that a burst of load from other processes on a
# shared host does not land on one side only; best is the best of all
# rounds, median the median of the rounds' medians.
#
# Nothing is installed silently. Without libopenblas-dev or OpenMP support in
# gcc the script says how to install them and exits 2; run as root with
# --install to let it run `apt-get install -y libopenblas-dev gcc` itself.
#
# Usage: scripts/bench-hwprobe.sh [--install] [--reps N] [--rounds R] [--sizes 2048,4096]
set -euo pipefail

install=0
reps=5
rounds=3
sizes=2048,4096
while [ $# -gt 0 ]; do
	case "$1" in
	--install) install=1 ;;
	--reps) reps="$2"; shift ;;
	--rounds) rounds="$2"; shift ;;
	--sizes) sizes="$2"; shift ;;
	-h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-hwprobe: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/scripts/bench-hwprobe"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

have_prereqs() {
	command -v gcc >/dev/null 2>&1 || return 1
	echo 'int main(void){return 0;}' >"$work/t.c"
	gcc -fopenmp "$work/t.c" -o "$work/t" 2>/dev/null || return 1
	printf '#include <cblas.h>\nint main(void){float a=1;cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,1,1,1,1,&a,1,&a,1,0,&a,1);return 0;}\n' >"$work/b.c"
	gcc "$work/b.c" -lopenblas -o "$work/b" 2>/dev/null || return 1
}

if ! have_prereqs; then
	if [ "$install" = 1 ] && [ "$(id -u)" = 0 ]; then
		echo "bench-hwprobe: installing libopenblas-dev and gcc (--install)" >&2
		apt-get install -y libopenblas-dev gcc >&2
		have_prereqs || { echo "bench-hwprobe: prerequisites still missing after install" >&2; exit 2; }
	else
		cat >&2 <<'MSG'
bench-hwprobe: needs gcc with OpenMP and OpenBLAS (cblas.h, -lopenblas).
Install them with:
    apt-get install -y libopenblas-dev gcc
or rerun as root with --install to let this script do it.
MSG
		exit 2
	fi
fi
command -v go >/dev/null 2>&1 || { echo "bench-hwprobe: needs the Go toolchain" >&2; exit 2; }

echo "bench-hwprobe: building the drivers" >&2
gcc -O2 "$src/sgemm_openblas.c" -lopenblas -o "$work/sgemm_openblas"
gcc -O3 -march=native -fopenmp "$src/stream_triad.c" -o "$work/stream_triad"
(cd "$root" && go build -o "$work/gobench" ./scripts/bench-hwprobe/gobench)

field() { # field NAME LINE
	echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# compare LABEL TARGET BESTFIELD OURS_CMD REF_CMD: runs both commands for
# $rounds alternating rounds, prints every line and the ratio; returns 1
# below the target.
compare() {
	local label=$1 target=$2 f=$3 ours=$4 ref=$5 a b ob="" rb="" om="" rm=""
	for ((r = 1; r <= rounds; r++)); do
		a=$(eval "$ours")
		b=$(eval "$ref")
		echo "  round $r hwprobe   $a"
		echo "  round $r reference $b"
		ob="$ob $(field "$f" "$a")" rb="$rb $(field "$f" "$b")"
		om="$om $(field median "$a")" rm="$rm $(field median "$b")"
	done
	awk -v label="$label" -v target="$target" -v ob="$ob" -v rb="$rb" -v om="$om" -v rm="$rm" '
		function best(s,  a, n, i, m) { n = split(s, a, " "); m = a[1]; for (i = 2; i <= n; i++) if (a[i] + 0 > m + 0) m = a[i]; return m }
		function med(s,  a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }; return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
		BEGIN {
			r = best(ob) / best(rb); m = med(om) / med(rm)
			printf "RATIO %s hwprobe/reference best=%.3f (%.4g vs %.4g) median=%.3f (%.4g vs %.4g) %s %sx\n", label, r, best(ob), best(rb), m, med(om), med(rm), (r >= target) ? "meets" : "BELOW", target
			exit (r >= target) ? 0 : 1
		}'
}

echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) CPUs)"
echo "openblas: $(dpkg-query -W -f '${Version}' libopenblas0-pthread 2>/dev/null || echo unknown), gcc: $(gcc -dumpfullversion)"
status=0
IFS=, read -ra ns <<<"$sizes"
for n in "${ns[@]}"; do
	# Separate processes, so that no library thread pool outlives its own
	# measurement.
	compare "sgemm n=$n (openblas)" 0.8 gflops \
		"\"$work/gobench\" --sgemm $n --triad=false --reps $reps" \
		"\"$work/sgemm_openblas\" $reps $n" || status=1
done
elements=$("$work/gobench" --sgemm "" --triad --reps 1 | tr ' ' '\n' | sed -n 's/^n=//p')
compare "triad n=$elements (C OpenMP)" 0.9 mbps \
	"\"$work/gobench\" --sgemm '' --triad --reps $reps" \
	"\"$work/stream_triad\" $elements $((reps * 2))" || status=1
exit $status
