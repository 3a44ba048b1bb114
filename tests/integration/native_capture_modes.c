/* Stream capture interaction modes through the native library, from C: built against the
 * project's own declarations (cricket_cuda.h, written by the test from
 * cricket_client.native.signatures.c_declarations()). cuMemAlloc/cuMemFree during a capture
 * are refused (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, the capture invalidated) exactly when the
 * calling thread's mode says so; each pthread has its own mode.
 *
 *     native_capture_modes       (exit status 0 and one line per result) */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cricket_cuda.h"

#define FUNCTIONS(X) X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) \
    X(cuStreamCreate) X(cuStreamDestroy_v2) X(cuMemAlloc_v2) X(cuMemFree_v2) \
    X(cuStreamBeginCapture_v2) X(cuStreamEndCapture) X(cuGraphDestroy) \
    X(cuThreadExchangeStreamCaptureMode) X(cuGetErrorName)
#define POINTER(name) static __typeof__(name) *p_##name;
FUNCTIONS(POINTER)

enum { GLOBAL = 0, THREAD_LOCAL = 1, RELAXED = 2 };

static const char *name_of(CUresult r) {
    const char *n = "?";
    p_cuGetErrorName(r, &n);
    return n;
}

#define CHECK(call) do { CUresult r_ = (call); if (r_) { \
    fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #call, name_of(r_)); \
    exit(2); } } while (0)

static CUcontext ctx;

/* the calling thread's mode set to `mode`; the one it had */
static int exchange(int mode) {
    int m = mode;
    CHECK(p_cuThreadExchangeStreamCaptureMode(&m));
    return m;
}

/* cuMemAlloc then (if it succeeded) cuMemFree, in the calling thread: the first error */
static CUresult alloc_and_free(void) {
    CUdeviceptr d = 0;
    CUresult r = p_cuMemAlloc_v2(&d, 256);
    if (r) return r;
    return p_cuMemFree_v2(d);
}

/* the end of a capture: "captured" or the error's name */
static const char *end_capture(CUstream s) {
    CUgraph g = 0;
    CUresult r = p_cuStreamEndCapture(s, &g);
    if (g) p_cuGraphDestroy(g);
    return r ? name_of(r) : "captured";
}

struct job { int mode; CUresult result; int previous; };

static void *other_thread(void *arg) {
    struct job *job = arg;
    CHECK(p_cuCtxSetCurrent(ctx));
    job->previous = exchange(job->mode);
    job->result = alloc_and_free();
    return NULL;
}

static CUresult in_thread(int mode, int *previous) {
    pthread_t t;
    struct job job = {mode, -1, -1};
    if (pthread_create(&t, NULL, other_thread, &job)) exit(5);
    pthread_join(t, NULL);
    *previous = job.previous;
    return job.result;
}

int main(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 3; }
#define RESOLVE(name) if (!(p_##name = (__typeof__(name) *)dlsym(lib, #name))) { \
        fprintf(stderr, "no %s\n", #name); return 3; }
    FUNCTIONS(RESOLVE)
    CUdevice dev; CUstream s;
    CHECK(p_cuInit(0));
    CHECK(p_cuDeviceGet(&dev, 0));
    CHECK(p_cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(p_cuCtxSetCurrent(ctx));
    CHECK(p_cuStreamCreate(&s, 1));

    /* Global: this thread's own capture refuses it, and is invalidated */
    printf("mode was %d\n", exchange(GLOBAL));
    CHECK(p_cuStreamBeginCapture_v2(s, GLOBAL));
    printf("global alloc %s\n", name_of(alloc_and_free()));
    printf("global end %s\n", end_capture(s));

    /* Relaxed: allowed, the capture stays valid */
    printf("mode was %d\n", exchange(RELAXED));
    CHECK(p_cuStreamBeginCapture_v2(s, GLOBAL));
    printf("relaxed alloc %s\n", name_of(alloc_and_free()));
    printf("relaxed end %s\n", end_capture(s));

    /* another thread during this thread's Global capture: its own mode decides */
    exchange(GLOBAL);
    int previous;
    CHECK(p_cuStreamBeginCapture_v2(s, GLOBAL));
    CUresult local = in_thread(THREAD_LOCAL, &previous);
    printf("other thread was %d, thread-local alloc %s\n", previous, name_of(local));
    printf("after thread-local end %s\n", end_capture(s));
    CHECK(p_cuStreamBeginCapture_v2(s, GLOBAL));
    CUresult global = in_thread(GLOBAL, &previous);
    printf("other thread was %d, global alloc %s\n", previous, name_of(global));
    printf("after global end %s\n", end_capture(s));

    /* no capture: allowed in any mode */
    printf("no capture alloc %s\n", name_of(alloc_and_free()));
    CHECK(p_cuStreamDestroy_v2(s));
    printf("done\n");
    return 0;
}
