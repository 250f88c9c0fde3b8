/* TEST DOUBLE. Fake libcudart, libcublasLt and libnccl for hwprobe's bench
 * tests: it exports the symbols hwprobe resolves, with host-memory behaviour
 * (malloc for device memory, memcpy for copies, wall-clock events) so the
 * loading, symbol resolution and call paths run without a GPU. Its figures
 * mean nothing. Build one library per role with -DROLE_CUDART, -DROLE_LT or
 * -DROLE_NCCL; -DOMIT_SYMBOL drops one symbol to test resolution failures. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef ROLE_CUDART
typedef struct { struct timespec t; } event;
#define NDEV 2
int cudaGetDeviceCount(int *n) { *n = NDEV; return 0; }
int cudaSetDevice(int d) { return d >= 0 && d < NDEV ? 0 : 101; }
int cudaGetDeviceProperties_v2(void *p, int d) {
	memset(p, 0, 1024);
	strcpy((char *)p, "Stub GPU (test double)");
	return d >= 0 && d < NDEV ? 0 : 101;
}
int cudaDeviceGetAttribute(int *v, int attr, int d) { *v = attr == 75 ? 9 : 0; return 0; }
int cudaMemGetInfo(size_t *f, size_t *t) { *f = *t = (size_t)1 << 34; return 0; }
int cudaMalloc(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }
int cudaFree(void *p) { free(p); return 0; }
int cudaMallocHost(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }
int cudaFreeHost(void *p) { free(p); return 0; }
int cudaMemcpy(void *d, const void *s, size_t n, int kind) { if (kind < 0 || kind > 4) return 21; memcpy(d, s, n); return 0; }
#ifndef OMIT_SYMBOL
int cudaMemcpyPeer(void *d, int dd, const void *s, int sd, size_t n) { memcpy(d, s, n); return 0; }
#endif
int cudaMemset(void *p, int v, size_t n) { memset(p, v, n); return 0; }
int cudaDeviceSynchronize(void) { return 0; }
int cudaDeviceCanAccessPeer(int *c, int a, int b) { *c = a != b; return 0; }
int cudaDeviceEnablePeerAccess(int peer, unsigned flags) { return 0; }
int cudaStreamCreate(void **s) { *s = malloc(8); return 0; }
int cudaStreamSynchronize(void *s) { return 0; }
int cudaEventCreate(void **e) { *e = calloc(1, sizeof(event)); return 0; }
int cudaEventRecord(void *e, void *s) { clock_gettime(CLOCK_MONOTONIC, &((event *)e)->t); return 0; }
int cudaEventSynchronize(void *e) { return 0; }
int cudaEventElapsedTime(float *ms, void *a, void *b) {
	event *x = a, *y = b;
	double d = (y->t.tv_sec - x->t.tv_sec) * 1e3 + (y->t.tv_nsec - x->t.tv_nsec) / 1e6;
	*ms = d > 1e-3 ? (float)d : 1e-3f;
	return 0;
}
int cudaEventDestroy(void *e) { free(e); return 0; }
const char *cudaGetErrorString(int e) { return "stub error"; }
#endif

#ifdef ROLE_LT
int cublasLtCreate(void **h) { *h = malloc(8); return 0; }
int cublasLtDestroy(void *h) { free(h); return 0; }
int cublasLtMatmulDescCreate(void **d, int compute, int scale) { *d = malloc(64); return compute == 68 && scale == 0 ? 0 : 7; }
int cublasLtMatmulDescDestroy(void *d) { free(d); return 0; }
int cublasLtMatmulDescSetAttribute(void *d, int attr, const void *buf, size_t n) { return buf && n == 4 ? 0 : 7; }
int cublasLtMatrixLayoutCreate(void **l, int type, uint64_t rows, uint64_t cols, int64_t ld) { *l = malloc(8); return ld >= (int64_t)rows ? 0 : 7; }
int cublasLtMatrixLayoutDestroy(void *l) { free(l); return 0; }
int cublasLtMatmulPreferenceCreate(void **p) { *p = malloc(8); return 0; }
int cublasLtMatmulPreferenceDestroy(void *p) { free(p); return 0; }
int cublasLtMatmulPreferenceSetAttribute(void *p, int attr, const void *buf, size_t n) { return 0; }
int cublasLtMatmulAlgoGetHeuristic(void *h, void *op, void *a, void *b, void *c, void *d, void *pref, int req, void *res, int *n) {
	memset(res, 0, 96);
	*n = 1;
	return 0;
}
#ifndef OMIT_SYMBOL
/* Checks the 16 arguments arrive where the C ABI puts them. */
int cublasLtMatmul(void *h, void *op, const float *alpha, const void *A, void *Ad, const void *B, void *Bd,
		const float *beta, const void *C, void *Cd, void *D, void *Dd, const void *algo, void *ws, size_t wsSize, void *stream) {
	if (!h || !op || !alpha || !A || !Ad || !B || !Bd || !beta || !C || !Cd || !D || !Dd || !algo) return 7;
	if (C != D || Cd != Dd || wsSize != (size_t)32 << 20 || stream != 0) return 7;
	return 0;
}
#endif
#endif

#ifdef ROLE_NCCL
int ncclCommInitAll(void **comms, int n, const int *devs) {
	for (int i = 0; i < n; i++) { if (devs[i] != i) return 4; comms[i] = malloc(8); }
	return 0;
}
int ncclCommDestroy(void *c) { free(c); return 0; }
int ncclAllReduce(const void *s, void *r, size_t count, int dtype, int op, void *comm, void *stream) {
	if (dtype != 7 || op != 0 || !comm) return 4;
	memcpy(r, s, count * 4);
	return 0;
}
int ncclGroupStart(void) { return 0; }
int ncclGroupEnd(void) { return 0; }
const char *ncclGetErrorString(int e) { return "stub nccl error"; }
#endif

#ifdef ROLE_CALL16
/* Weighted sum: distinguishes every argument position. */
long hwprobe_sum16(long a1, long a2, long a3, long a4, long a5, long a6, long a7, long a8,
		long a9, long a10, long a11, long a12, long a13, long a14, long a15, long a16) {
	return a1 * 1 + a2 * 2 + a3 * 3 + a4 * 4 + a5 * 5 + a6 * 6 + a7 * 7 + a8 * 8 + a9 * 9 + a10 * 10 +
		a11 * 11 + a12 * 12 + a13 * 13 + a14 * 14 + a15 * 15 + a16 * 16;
}
#endif
