#!/usr/bin/env bash
# Side-by-side check of hwprobe's CPU benchmarks against references built on
# this host, in one go on the same machine (`make bench-hwprobe`):
#   - hwprobe's built-in sgemm against OpenBLAS cblas_sgemm (a small C driver
#     linked with Debian's libopenblas-dev), at n = 2048 and 4096;
#   - hwprobe's STREAM triad against a C triad (gcc -O3 -march=native
#     -fopenmp) over arrays of the same length.
# It prints each figure and the ratios hwprobe/reference (best of the
# repetitions, and medians). Targets: sgemm >= 0.8x, triad >= 0.9x.
#
# Nothing is installed silently. Without libopenblas-dev or OpenMP support in
# gcc the script says how to install them and exits 2; run as root with
# --install to let it run `apt-get install -y libopenblas-dev gcc` itself.
#
# Usage: scripts/bench-hwprobe.sh [--install] [--reps N] [--sizes 2048,4096]
set -euo pipefail

install=0
reps=5
sizes=2048,4096
while [ $# -gt 0 ]; do
	case "$1" in
	--install) install=1 ;;
	--reps) reps="$2"; shift ;;
	--sizes) sizes="$2"; shift ;;
	-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) CPUs)"
echo "openblas: $(dpkg-query -W -f '${Version}' libopenblas0-pthread 2>/dev/null || echo unknown), gcc: $(gcc -dumpfullversion)"
status=0
IFS=, read -ra ns <<<"$sizes"
for n in "${ns[@]}"; do
	# hwprobe first, then the reference: separate processes, so that no
	# library thread pool outlives its own measurement.
	ours=$("$work/gobench" --sgemm "$n" --triad=false --reps "$reps")
	ref=$("$work/sgemm_openblas" "$reps" "$n")
	echo "hwprobe  $ours"
	echo "openblas $ref"
	ratio=$(awk -v a="$(field gflops "$ours")" -v b="$(field gflops "$ref")" 'BEGIN{printf "%.3f", a/b}')
	mratio=$(awk -v a="$(field median "$ours")" -v b="$(field median "$ref")" 'BEGIN{printf "%.3f", a/b}')
	verdict=$(awk -v r="$ratio" 'BEGIN{print (r >= 0.8) ? "meets 0.8x" : "BELOW 0.8x"}')
	echo "RATIO sgemm n=$n hwprobe/openblas best=$ratio median=$mratio ($verdict)"
	[ "$verdict" = "meets 0.8x" ] || status=1
done

ours=$("$work/gobench" --sgemm "" --triad --reps "$reps")
elements=$(field n "$ours")
ref=$("$work/stream_triad" "$elements" "$((reps * 2))")
echo "hwprobe  $ours"
echo "C/OpenMP $ref"
ratio=$(awk -v a="$(field mbps "$ours")" -v b="$(field mbps "$ref")" 'BEGIN{printf "%.3f", a/b}')
mratio=$(awk -v a="$(field median "$ours")" -v b="$(field median "$ref")" 'BEGIN{printf "%.3f", a/b}')
verdict=$(awk -v r="$ratio" 'BEGIN{print (r >= 0.9) ? "meets 0.9x" : "BELOW 0.9x"}')
echo "RATIO triad n=$elements hwprobe/c-openmp best=$ratio median=$mratio ($verdict)"
[ "$verdict" = "meets 0.9x" ] || status=1
exit $status
