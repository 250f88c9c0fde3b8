/* Reference GEMM driver for scripts/bench-hwprobe.sh. It loads a BLAS at run
 * time (dlopen), so one binary measures every library, and prints one line:
 *   <prec> n=<n> gflops=<best> median=<median> reps=<r> ref=<lib> kernel=<k> version=<v> threads=<t> check=ok
 * prec is sgemm (fp32, C = A*B row-major), bf16 (bf16 A and B, fp32 C),
 * bf16w (the same product where the library has no bf16 GEMM for this CPU:
 * each call widens A and B to fp32, on every CPU at once, then calls the
 * fp32 GEMM; both inside the timing) or int8 (u8 A, s8 B, int32 C, zero
 * offsets: oneDNN's dnnl_gemm_u8s8s32, the form hwprobe's cpu_int8_gemm
 * computes; its line says gops= for gflops=).
 * Libraries: openblas (cblas_sgemm, cblas_sbgemm; kernel from
 * openblas_get_corename), blis (cblas_sgemm; kernel from bli_arch_query_id),
 * dnnl (oneDNN dnnl_sgemm, dnnl_gemm_bf16bf16f32, dnnl_gemm_u8s8s32; kernel
 * from its ISA dispatch, reported as ONEDNN_VERBOSE would). Every product is
 * checked on a sample against float64 (int8: for equality with an int64
 * sum); a wrong product exits 1, a missing symbol exits 3.
 * int8 B spans the type's whole range, or [-BMAX, BMAX] with the optional
 * sixth argument (the range hwprobe's kernel is fed on a CPU without VNNI,
 * where u8 x s8 pair sums saturate at int16: its line's b_max=).
 * Usage: gemm_ref LIBPATH openblas|blis|dnnl sgemm|bf16|bf16w|int8 REPS N [BMAX]
 * Build: gcc -O2 gemm_ref.c -ldl -lm -lpthread -o gemm_ref */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static uint16_t to_bf16(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

static float from_bf16(uint16_t h) {
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

typedef void (*cblas_sgemm_t)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
typedef void (*cblas_sbgemm_t)(int, int, int, int, int, int, float, const uint16_t *, int, const uint16_t *, int, float, float *, int);
typedef int (*dnnl_sgemm_t)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t, const float *, int64_t, float, float *, int64_t);
typedef int (*dnnl_i8gemm_t)(char, char, char, int64_t, int64_t, int64_t, float, const uint8_t *, int64_t, uint8_t, const int8_t *, int64_t, int8_t, float, int32_t *, int64_t, const int32_t *);
typedef int (*dnnl_bgemm_t)(char, char, int64_t, int64_t, int64_t, float, const uint16_t *, int64_t, const uint16_t *, int64_t, float, float *, int64_t);

static void *lib;
static const char *kind, *prec;
static int n;
static float *a, *b, *c;
static uint16_t *a16, *b16;
static uint8_t *a8;
static int8_t *b8;
static int32_t *c32;
static void *fn;
static float *aw, *bw; /* bf16w: A and B widened to fp32 */
static int widen_threads = 1;

struct widen_part { size_t lo, hi; };

static void *widen_part(void *arg) {
	const struct widen_part *w = arg;
	for (size_t j = w->lo; j < w->hi; j++) {
		uint32_t x = (uint32_t)a16[j] << 16, y = (uint32_t)b16[j] << 16;
		memcpy(&aw[j], &x, 4), memcpy(&bw[j], &y, 4);
	}
	return NULL;
}

/* widen converts a16 and b16 into aw and bw on widen_threads threads (made
 * per call and joined: no pool spins beside the library's threads). */
static void widen(void) {
	pthread_t th[256];
	struct widen_part parts[256];
	size_t nn = (size_t)n * n;
	int t = widen_threads;
	for (int i = 0; i < t; i++) {
		parts[i].lo = nn * i / t, parts[i].hi = nn * (i + 1) / t;
		if (i > 0 && pthread_create(&th[i], NULL, widen_part, &parts[i]) != 0) { fprintf(stderr, "gemm_ref: pthread_create failed\n"); exit(1); }
	}
	widen_part(&parts[0]);
	for (int i = 1; i < t; i++) pthread_join(th[i], NULL);
}

static void *sym(const char *s) {
	void *p = dlsym(lib, s);
	if (!p) { printf("%s n=%d ref=%s missing=%s\n", prec, n, kind, s); exit(3); }
	return p;
}

static void call(void) {
	int bf = strcmp(prec, "bf16") == 0;
	if (strcmp(prec, "bf16w") == 0) {
		widen();
		if (strcmp(kind, "dnnl") == 0) {
			int st = ((dnnl_sgemm_t)fn)('N', 'N', n, n, n, 1, aw, n, bw, n, 0, c, n);
			if (st != 0) { fprintf(stderr, "gemm_ref: dnnl status %d\n", st); exit(1); }
		} else {
			((cblas_sgemm_t)fn)(101, 111, 111, n, n, n, 1, aw, n, bw, n, 0, c, n);
		}
	} else if (strcmp(prec, "int8") == 0) {
		int32_t co = 0;
		int st = ((dnnl_i8gemm_t)fn)('N', 'N', 'F', n, n, n, 1, a8, n, 0, b8, n, 0, 0, c32, n, &co);
		if (st != 0) { fprintf(stderr, "gemm_ref: dnnl status %d\n", st); exit(1); }
	} else if (strcmp(kind, "dnnl") == 0) {
		int st = bf ? ((dnnl_bgemm_t)fn)('N', 'N', n, n, n, 1, a16, n, b16, n, 0, c, n)
		            : ((dnnl_sgemm_t)fn)('N', 'N', n, n, n, 1, a, n, b, n, 0, c, n);
		if (st != 0) { fprintf(stderr, "gemm_ref: dnnl status %d\n", st); exit(1); }
	} else if (bf) {
		((cblas_sbgemm_t)fn)(101, 111, 111, n, n, n, 1, a16, n, b16, n, 0, c, n);
	} else {
		((cblas_sgemm_t)fn)(101, 111, 111, n, n, n, 1, a, n, b, n, 0, c, n);
	}
}

int main(int argc, char **argv) {
	if (argc != 6 && argc != 7) { fprintf(stderr, "usage: gemm_ref LIBPATH openblas|blis|dnnl sgemm|bf16|bf16w|int8 REPS N [BMAX]\n"); return 2; }
	kind = argv[2], prec = argv[3];
	int reps = atoi(argv[4]);
	n = atoi(argv[5]);
	int bmax = argc == 7 ? atoi(argv[6]) : 128;
	if (bmax < 1 || bmax > 128) { fprintf(stderr, "gemm_ref: BMAX %d not in [1, 128]\n", bmax); return 2; }
	if (reps < 1 || reps > 100 || n < 16) { fprintf(stderr, "gemm_ref: bad reps or n\n"); return 2; }
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) { printf("%s n=%d ref=%s missing=%s\n", prec, n, kind, argv[1]); return 3; }
	int bf = strcmp(prec, "bf16") == 0, i8 = strcmp(prec, "int8") == 0, bfw = strcmp(prec, "bf16w") == 0;
	if (!bf && !bfw && !i8 && strcmp(prec, "sgemm") != 0) { fprintf(stderr, "gemm_ref: unknown precision %s\n", prec); return 2; }
	if (i8 && strcmp(kind, "dnnl") != 0) { printf("%s n=%d ref=%s missing=int8_gemm\n", prec, n, kind); return 3; }
	char kernel[128] = "unknown", version[128] = "unknown";
	int threads = 0;
	if (strcmp(kind, "openblas") == 0) {
		fn = sym(bf ? "cblas_sbgemm" : "cblas_sgemm");
		snprintf(kernel, sizeof kernel, "%s", ((char *(*)(void))sym("openblas_get_corename"))());
		snprintf(version, sizeof version, "%s", ((char *(*)(void))sym("openblas_get_config"))());
		threads = ((int (*)(void))sym("openblas_get_num_threads"))();
	} else if (strcmp(kind, "blis") == 0) {
		if (bf) sym("cblas_sbgemm"); /* BLIS has no bf16 GEMM: reported missing (bf16w widens) */
		fn = sym("cblas_sgemm");
		int id = ((int (*)(void))sym("bli_arch_query_id"))();
		snprintf(kernel, sizeof kernel, "%s", ((const char *(*)(int))sym("bli_arch_string"))(id));
		snprintf(version, sizeof version, "BLIS-%s", ((const char *(*)(void))sym("bli_info_get_version_str"))());
		threads = (int)((long (*)(void))sym("bli_thread_get_num_threads"))();
	} else if (strcmp(kind, "dnnl") == 0) {
		fn = sym(i8 ? "dnnl_gemm_u8s8s32" : bf ? "dnnl_gemm_bf16bf16f32" : "dnnl_sgemm");
		typedef struct { int major, minor, patch; const char *hash; unsigned cpu_runtime, gpu_runtime; } ver_t;
		const ver_t *v = ((const ver_t *(*)(void))sym("dnnl_version"))();
		snprintf(version, sizeof version, "oneDNN-%d.%d.%d", v->major, v->minor, v->patch);
		int isa = ((int (*)(void))sym("dnnl_get_effective_cpu_isa"))();
		/* dnnl_cpu_isa_t values of oneDNN 2.x */
		const char *name = isa == 0xe7 ? "avx512_core_bf16" : isa == 0x3e7 ? "avx512_core_amx" : isa == 0x67 ? "avx512_core_vnni"
			: isa == 0x27 ? "avx512_core" : isa == 0x7 ? "avx2" : "isa";
		snprintf(kernel, sizeof kernel, "%s(0x%x)", name, isa);
		char *t = getenv("OMP_NUM_THREADS");
		threads = t ? atoi(t) : 0;
	} else {
		fprintf(stderr, "gemm_ref: unknown library kind %s\n", kind);
		return 2;
	}
	if (bfw) strncat(kernel, "+widened-to-fp32", sizeof kernel - strlen(kernel) - 1);
	for (char *p = version; *p; p++) if (*p == ' ') *p = '_';
	for (char *p = kernel; *p; p++) if (*p == ' ') *p = '_';
	size_t nn = (size_t)n * n;
	a = malloc(nn * 4), b = malloc(nn * 4), c = malloc(nn * 4);
	a16 = malloc(nn * 2), b16 = malloc(nn * 2);
	a8 = malloc(nn), b8 = malloc(nn), c32 = malloc(nn * 4);
	if (bfw) {
		aw = malloc(nn * 4), bw = malloc(nn * 4);
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		widen_threads = cpus < 1 ? 1 : cpus > 256 ? 256 : (int)cpus;
		if (!aw || !bw) { fprintf(stderr, "out of memory\n"); return 1; }
	}
	if (!a || !b || !c || !a16 || !b16 || !a8 || !b8 || !c32) { fprintf(stderr, "out of memory\n"); return 1; }
	srand(1);
	for (size_t j = 0; j < nn; j++) {
		a[j] = (float)rand() / RAND_MAX * 2 - 1, b[j] = (float)rand() / RAND_MAX * 2 - 1, c[j] = 0;
		a16[j] = to_bf16(a[j]), b16[j] = to_bf16(b[j]);
		if (bf || bfw) a[j] = from_bf16(a16[j]), b[j] = from_bf16(b16[j]); /* the values the product uses */
		a8[j] = (uint8_t)(rand() & 0xff), b8[j] = (int8_t)(rand() & 0xff); /* the types' whole ranges, as hwprobe */
		if (bmax < 128) b8[j] = (int8_t)(rand() % (2 * bmax + 1) - bmax);
	}
	call(); /* warm-up, and the product checked below */
	if (i8) {
		for (int t = 0; t < 32; t++) {
			int i = t < 2 ? t * (n - 1) : rand() % n, j = t < 2 ? t * (n - 1) : rand() % n;
			int64_t s = 0;
			for (int p = 0; p < n; p++) s += (int64_t)a8[(size_t)i * n + p] * b8[(size_t)p * n + j];
			if (c32[(size_t)i * n + j] != s) {
				printf("%s n=%d ref=%s kernel=%s check=WRONG C[%d,%d]=%d want=%lld\n", prec, n, kind, kernel, i, j, c32[(size_t)i * n + j], (long long)s);
				return 1;
			}
		}
	}
	int pts[6][2] = {{0, 0}, {n - 1, n - 1}, {n / 3, n / 2}, {n - 1, 0}, {7, n - 5}, {n / 2, 3}};
	for (int t = 0; t < (i8 ? 0 : 6); t++) {
		int i = pts[t][0], j = pts[t][1];
		double s = 0, mag = 0;
		for (int p = 0; p < n; p++) { double x = (double)a[(size_t)i * n + p] * b[(size_t)p * n + j]; s += x; mag += fabs(x); }
		if (!(fabs(c[(size_t)i * n + j] - s) <= 1e-4 * mag)) {
			printf("%s n=%d ref=%s kernel=%s check=WRONG C[%d,%d]=%g want=%g\n", prec, n, kind, kernel, i, j, c[(size_t)i * n + j], s);
			return 1;
		}
	}
	double g[100], best = 0;
	for (int r = 0; r < reps; r++) {
		double t0 = now();
		call();
		g[r] = 2.0 * n * (double)n * n / (now() - t0) / 1e9;
		if (g[r] > best) best = g[r];
	}
	qsort(g, reps, sizeof(double), cmp);
	char range[32] = "";
	if (i8) snprintf(range, sizeof range, " b_max=%d", bmax);
	printf("%s n=%d %s=%.2f median=%.2f reps=%d ref=%s kernel=%s version=%s threads=%d%s check=ok\n",
		prec, n, i8 ? "gops" : "gflops", best, g[reps / 2], reps, kind, kernel, version, threads, range);
	return 0;
}
