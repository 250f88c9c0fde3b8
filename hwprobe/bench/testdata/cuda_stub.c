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
/* -DTHREAD_CHECK counts calls made from another host thread than the call
 * before: CUDA's current device belongs to the calling thread, so a caller
 * that moves between threads works on the wrong device. cudaSetDevice then
 * sleeps briefly, long enough for a Go runtime to hand its processor on. */
#ifdef THREAD_CHECK
#include <pthread.h>
#include <unistd.h>
static pthread_t owner;
static int owned, switches;
static void thread_check(void) {
	pthread_t me = pthread_self();
	if (owned && !pthread_equal(owner, me)) switches++;
	owner = me, owned = 1;
}
int stub_thread_switches(void) { return switches; }
#define THREAD() thread_check()
#define SET_DEVICE_DELAY() usleep(200)
#else
#define THREAD()
#define SET_DEVICE_DELAY()
#endif
#define NDEV 2
/* -DTOO_NEW plays a runtime newer than the driver: cudaGetDeviceCount
 * fails with cudaErrorInsufficientDriver (35). */
#ifdef TOO_NEW
int cudaGetDeviceCount(int *n) { *n = 0; return 35; }
int cudaRuntimeGetVersion(int *v) { *v = 14020; return 0; }
#else
int cudaGetDeviceCount(int *n) { *n = NDEV; return 0; }
int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }
#endif
int cudaSetDevice(int d) { THREAD(); SET_DEVICE_DELAY(); return d >= 0 && d < NDEV ? 0 : 101; }
int cudaGetDeviceProperties_v2(void *p, int d) {
	memset(p, 0, 1024);
	strcpy((char *)p, "Stub GPU (test double)");
	return d >= 0 && d < NDEV ? 0 : 101;
}
int cudaDeviceGetAttribute(int *v, int attr, int d) { *v = attr == 75 ? 9 : 0; return 0; }
int cudaMemGetInfo(size_t *f, size_t *t) { *f = *t = (size_t)1 << 34; return 0; }
int cudaMalloc(void **p, size_t n) { THREAD(); *p = malloc(n); return *p ? 0 : 2; }
int cudaFree(void *p) { free(p); return 0; }
int cudaMallocHost(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }
int cudaFreeHost(void *p) { free(p); return 0; }
int cudaMemcpy(void *d, const void *s, size_t n, int kind) { THREAD(); if (kind < 0 || kind > 4) return 21; memcpy(d, s, n); return 0; }
#ifndef OMIT_SYMBOL
int cudaMemcpyPeer(void *d, int dd, const void *s, int sd, size_t n) { THREAD(); memcpy(d, s, n); return 0; }
#endif
int cudaMemset(void *p, int v, size_t n) { THREAD(); memset(p, v, n); return 0; }
int cudaDeviceSynchronize(void) { return 0; }
int cudaDeviceCanAccessPeer(int *c, int a, int b) { *c = a != b; return 0; }
int cudaDeviceEnablePeerAccess(int peer, unsigned flags) { return 0; }
int cudaStreamCreate(void **s) { *s = malloc(8); return 0; }
int cudaStreamSynchronize(void *s) { return 0; }
int cudaEventCreate(void **e) { *e = calloc(1, sizeof(event)); return 0; }
int cudaEventRecord(void *e, void *s) { THREAD(); clock_gettime(CLOCK_MONOTONIC, &((event *)e)->t); return 0; }
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
/* The matmul computes D = alpha*op(A)*op(B) + beta*C on the host for shapes
 * up to STUB_MAX_MACS multiply-adds (bf16, fp16 and fp8 E4M3 inputs; bf16,
 * fp16 or fp32 outputs; ReLU epilogue), so hwprobe's check of the product
 * runs; larger shapes are left uncomputed. -DWRONG_PRODUCT perturbs the
 * result, to test that hwprobe notices a GPU that computes garbage. */
#define STUB_MAX_MACS ((uint64_t)1 << 27)
typedef struct { int type; uint64_t rows, cols; int64_t ld; } layout;
typedef struct { int ta, tb, epi; } mdesc;

static float ld_elem(const void *p, int type, size_t i) {
	switch (type) {
	case 14: { uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16; float f; memcpy(&f, &u, 4); return f; }
	case 2: return (float)((const _Float16 *)p)[i];
	case 28: {
		uint8_t b = ((const uint8_t *)p)[i];
		int sign = b >> 7, e = (b >> 3) & 15, m = b & 7;
		float v = e == 0 ? (float)m / 512.0f : (1.0f + (float)m / 8.0f) * (float)(1 << e) / 128.0f;
		return sign ? -v : v;
	}
	default: return ((const float *)p)[i];
	}
}

static void st_elem(void *p, int type, size_t i, float v) {
	switch (type) {
	case 14: {
		uint32_t u; memcpy(&u, &v, 4);
		u += 0x7fff + ((u >> 16) & 1);
		((uint16_t *)p)[i] = (uint16_t)(u >> 16);
		break;
	}
	case 2: ((_Float16 *)p)[i] = (_Float16)v; break;
	default: ((float *)p)[i] = v;
	}
}

size_t cublasLtGetVersion(void) { return 130100; }
int cublasLtCreate(void **h) { *h = malloc(8); return 0; }
int cublasLtDestroy(void *h) { free(h); return 0; }
int cublasLtMatmulDescCreate(void **d, int compute, int scale) { *d = calloc(1, sizeof(mdesc)); return compute == 68 && scale == 0 ? 0 : 7; }
int cublasLtMatmulDescDestroy(void *d) { free(d); return 0; }
int cublasLtMatmulDescSetAttribute(void *d, int attr, const void *buf, size_t n) {
	if (!buf || n != 4) return 7;
	mdesc *m = d;
	int v; memcpy(&v, buf, 4);
	if (attr == 3) m->ta = v;
	if (attr == 4) m->tb = v;
	if (attr == 7) m->epi = v;
	return 0;
}
int cublasLtMatrixLayoutCreate(void **l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
	layout *x = malloc(sizeof(layout));
	x->type = type, x->rows = rows, x->cols = cols, x->ld = ld;
	*l = x;
	return ld >= (int64_t)rows ? 0 : 7;
}
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
	const mdesc *md = op;
	const layout *la = Ad, *lb = Bd, *ld = Dd;
	uint64_t m = md->ta ? la->cols : la->rows, k = md->ta ? la->rows : la->cols, n = ld->cols;
	if ((md->tb ? lb->cols : lb->rows) != k || (md->tb ? lb->rows : lb->cols) != n || ld->rows != m) return 7;
	if (m * n * k > STUB_MAX_MACS) return 0;
	for (uint64_t j = 0; j < n; j++)
		for (uint64_t i = 0; i < m; i++) {
			float acc = 0;
			for (uint64_t p = 0; p < k; p++) {
				size_t ai = md->ta ? p + i * la->ld : i + p * la->ld;
				size_t bi = md->tb ? j + p * lb->ld : p + j * lb->ld;
				acc += ld_elem(A, la->type, ai) * ld_elem(B, lb->type, bi);
			}
			size_t di = i + j * ld->ld;
			float v = *alpha * acc + (*beta != 0 ? *beta * ld_elem(C, ld->type, di) : 0);
			if (md->epi == 2 && v < 0) v = 0;
#ifdef WRONG_PRODUCT
			if (i == m / 2) v += 1.0f;
#endif
			st_elem(D, ld->type, di, v);
		}
	return 0;
}
#endif
#endif

#ifdef ROLE_NCCL
/* All-reduce (float sum) over the calls between ncclGroupStart and
 * ncclGroupEnd, done on the host at ncclGroupEnd. -DWRONG_SUM copies each
 * rank's own input instead, to test that hwprobe checks the sum. */
#define MAXRANKS 16
static struct { const float *s; float *r; size_t count; } pend[MAXRANKS];
static int npend, ingroup;
static void reduce(void) {
	for (size_t e = 0; npend > 0 && e < pend[0].count; e++) {
		float sum = 0;
		for (int i = 0; i < npend; i++) sum += pend[i].s[e];
		for (int i = 0; i < npend; i++) {
#ifdef WRONG_SUM
			pend[i].r[e] = pend[i].s[e];
#else
			pend[i].r[e] = sum;
#endif
		}
	}
	npend = 0;
}
int ncclCommInitAll(void **comms, int n, const int *devs) {
	for (int i = 0; i < n; i++) { if (devs[i] != i) return 4; comms[i] = malloc(8); }
	return 0;
}
int ncclCommDestroy(void *c) { free(c); return 0; }
int ncclAllReduce(const void *s, void *r, size_t count, int dtype, int op, void *comm, void *stream) {
	if (dtype != 7 || op != 0 || !comm || npend >= MAXRANKS) return 4;
	if (npend > 0 && pend[0].count != count) return 4;
	pend[npend].s = s, pend[npend].r = r, pend[npend].count = count;
	npend++;
	if (!ingroup) reduce();
	return 0;
}
int ncclGroupStart(void) { ingroup = 1; return 0; }
int ncclGroupEnd(void) { ingroup = 0; reduce(); return 0; }
const char *ncclGetErrorString(int e) { return "stub nccl error"; }
int ncclGetVersion(int *v) { *v = 22809; return 0; }
#endif

#ifdef ROLE_CALL16
/* Weighted sum: distinguishes every argument position. */
long hwprobe_sum16(long a1, long a2, long a3, long a4, long a5, long a6, long a7, long a8,
		long a9, long a10, long a11, long a12, long a13, long a14, long a15, long a16) {
	return a1 * 1 + a2 * 2 + a3 * 3 + a4 * 4 + a5 * 5 + a6 * 6 + a7 * 7 + a8 * 8 + a9 * 9 + a10 * 10 +
		a11 * 11 + a12 * 12 + a13 * 13 + a14 * 14 + a15 * 15 + a16 * 16;
}
#endif
