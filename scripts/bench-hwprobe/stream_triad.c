/* Reference STREAM-style triad for scripts/bench-hwprobe.sh: a[i] = b[i] +
 * s*c[i] over float64 arrays of n elements, OpenMP across cores, compiled
 * with gcc -O3 -march=native -fopenmp. The stores are non-temporal
 * (_mm512_stream_pd with AVX-512, _mm256_stream_pd with AVX): the result
 * goes to memory without the read-for-ownership an ordinary store pays, so
 * the 24 bytes credited per element are the bytes that move, as in
 * hwprobe's own triad. MB = 10^6 bytes.
 * Prints "triad n=<n> mbps=<best> median=<median> reps=<r> threads=<t> kernel=<stores> check=ok".
 * Usage: stream_triad <elements> [reps] */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

#if defined(__AVX512F__)
#define STORES "nt-avx512"
#define W 8
#elif defined(__AVX__)
#define STORES "nt-avx"
#define W 4
#else
#define STORES "ordinary"
#define W 1
#endif

static void triad(double *restrict a, const double *restrict b, const double *restrict c, double s, long n) {
#pragma omp parallel for schedule(static)
	for (long j = 0; j < n / W; j++) {
#if defined(__AVX512F__)
		__m512d v = _mm512_fmadd_pd(_mm512_set1_pd(s), _mm512_load_pd(c + j * W), _mm512_load_pd(b + j * W));
		_mm512_stream_pd(a + j * W, v);
#elif defined(__AVX__)
		__m256d v = _mm256_add_pd(_mm256_load_pd(b + j * W), _mm256_mul_pd(_mm256_set1_pd(s), _mm256_load_pd(c + j * W)));
		_mm256_stream_pd(a + j * W, v);
#else
		a[j] = b[j] + s * c[j];
#endif
	}
	for (long j = n / W * W; j < n; j++) a[j] = b[j] + s * c[j];
#if W > 1
	_mm_sfence();
#endif
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 20000000L;
	int reps = argc > 2 ? atoi(argv[2]) : 10;
	if (n < 1000 || reps < 1 || reps > 100) { fprintf(stderr, "usage: stream_triad elements [reps]\n"); return 2; }
	size_t bytes = ((size_t)n * sizeof(double) + 63) / 64 * 64;
	double *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes), *c = aligned_alloc(64, bytes);
	if (!a || !b || !c) { fprintf(stderr, "out of memory\n"); return 1; }
	const double s = 3.0;
#pragma omp parallel for schedule(static)
	for (long j = 0; j < n; j++) { a[j] = 1.0; b[j] = 2.0; c[j] = 0.5; }
	double mb[100], best = 0;
	for (int r = 0; r <= reps; r++) {
		double t0 = omp_get_wtime();
		triad(a, b, c, s, n);
		double t = omp_get_wtime() - t0;
		if (r == 0) continue; /* warm-up */
		mb[r - 1] = 24.0 * n / t / 1e6;
		if (mb[r - 1] > best) best = mb[r - 1];
	}
	qsort(mb, reps, sizeof(double), cmp);
	for (long j = 0; j < n; j += n / 16 + 1)
		if (a[j] != 3.5) { fprintf(stderr, "triad: a[%ld] = %g, want 3.5\n", j, a[j]); return 1; }
	if (a[n - 1] != 3.5) { fprintf(stderr, "triad: bad tail\n"); return 1; }
	printf("triad n=%ld mbps=%.0f median=%.0f reps=%d threads=%d kernel=%s check=ok\n", n, best, mb[reps / 2], reps, omp_get_max_threads(), STORES);
	free(a); free(b); free(c);
	return 0;
}
