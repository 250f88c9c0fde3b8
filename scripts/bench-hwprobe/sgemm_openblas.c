/* Reference sgemm driver for scripts/bench-hwprobe.sh: times cblas_sgemm
 * (C = A*B, row-major, n x n) from the host's BLAS and prints one line per
 * size: "sgemm n=<n> gflops=<best> median=<median> reps=<r>".
 * Build: gcc -O2 sgemm_openblas.c -lopenblas -o sgemm_openblas */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	int reps = argc > 1 ? atoi(argv[1]) : 5;
	if (reps < 1 || reps > 100) reps = 5;
	for (int i = 2; i < argc || (argc <= 2 && i < 3); i++) {
		int n = argc > 2 ? atoi(argv[i]) : 2048;
		size_t nn = (size_t)n * n;
		float *a = malloc(nn * sizeof(float)), *b = malloc(nn * sizeof(float)), *c = malloc(nn * sizeof(float));
		if (!a || !b || !c) { fprintf(stderr, "out of memory\n"); return 1; }
		srand(1);
		for (size_t j = 0; j < nn; j++) {
			a[j] = (float)rand() / RAND_MAX - 0.5f;
			b[j] = (float)rand() / RAND_MAX - 0.5f;
			c[j] = 0;
		}
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n); /* warm-up */
		double g[100], best = 0;
		for (int r = 0; r < reps; r++) {
			double t0 = now();
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
			g[r] = 2.0 * n * (double)n * n / (now() - t0) / 1e9;
			if (g[r] > best) best = g[r];
		}
		qsort(g, reps, sizeof(double), cmp);
		printf("sgemm n=%d gflops=%.2f median=%.2f reps=%d\n", n, best, g[reps / 2], reps);
		free(a); free(b); free(c);
	}
	return 0;
}
