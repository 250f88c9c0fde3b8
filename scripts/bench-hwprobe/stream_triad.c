/* Reference STREAM-style triad for scripts/bench-hwprobe.sh: a[i] = b[i] +
 * s*c[i] over float64 arrays of n elements, OpenMP across cores, compiled
 * with gcc -O3 -fopenmp. MB = 10^6 bytes; 24 bytes move per element.
 * Prints "triad n=<n> mbps=<best> median=<median> reps=<r> threads=<t>".
 * Usage: stream_triad <elements> [reps] */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 20000000L;
	int reps = argc > 2 ? atoi(argv[2]) : 10;
	if (n < 1000 || reps < 1 || reps > 100) { fprintf(stderr, "usage: stream_triad elements [reps]\n"); return 2; }
	double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)), *c = malloc(n * sizeof(double));
	if (!a || !b || !c) { fprintf(stderr, "out of memory\n"); return 1; }
	const double s = 3.0;
#pragma omp parallel for schedule(static)
	for (long j = 0; j < n; j++) { a[j] = 1.0; b[j] = 2.0; c[j] = 0.5; }
	double mb[100], best = 0;
	for (int r = 0; r <= reps; r++) {
		double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
		for (long j = 0; j < n; j++) a[j] = b[j] + s * c[j];
		double t = omp_get_wtime() - t0;
		if (r == 0) continue; /* warm-up */
		mb[r - 1] = 24.0 * n / t / 1e6;
		if (mb[r - 1] > best) best = mb[r - 1];
	}
	qsort(mb, reps, sizeof(double), cmp);
	double check = 0;
	for (long j = 0; j < n; j += n / 16) check += a[j];
	if (check <= 0) { fprintf(stderr, "triad: bad result\n"); return 1; }
	printf("triad n=%ld mbps=%.0f median=%.0f reps=%d threads=%d\n", n, best, mb[reps / 2], reps, omp_get_max_threads());
	free(a); free(b); free(c);
	return 0;
}
