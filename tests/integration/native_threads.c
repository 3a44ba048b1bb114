/* A C program using the CUDA driver API through dlopen("libcuda.so.1"), with its own
 * declarations (no CUDA header): a module from a cubin, launches with kernelParams and with
 * `extra`, copies, streams, events; then 8 pthreads making calls at once; then fork(): the
 * child makes calls of its own, and the parent's session must be intact afterwards.
 *
 *     native_threads CUBIN       (exit status 0 and "ok" lines when everything held) */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUevent;

static CUresult (*getProc)(const char *, void **, int, unsigned long long, int *);
static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(CUdevice *, int);
static CUresult (*cuDeviceGetCount)(int *);
static CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*cuMemFree)(CUdeviceptr);
static CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
static CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*cuModuleLoadData)(CUmodule *, const void *);
static CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, CUstream, void **, void **);
static CUresult (*cuStreamCreate)(CUstream *, unsigned);
static CUresult (*cuStreamSynchronize)(CUstream);
static CUresult (*cuEventCreate)(CUevent *, unsigned);
static CUresult (*cuEventRecord)(CUevent, CUstream);
static CUresult (*cuEventSynchronize)(CUevent);
static CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
static CUresult (*cuGetErrorName)(CUresult, const char **);
static CUresult (*cuGraphicsGLRegisterBuffer)(void **, unsigned, unsigned);

#define CHECK(call) do { CUresult r_ = (call); if (r_) { const char *n_ = "?"; \
    cuGetErrorName(r_, &n_); fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #call, n_); \
    exit(2); } } while (0)
#define RESOLVE(name, version) do { int st_ = -1; \
    if (getProc(#name, (void **)&name, version, 0, &st_) || !name) { \
        fprintf(stderr, "cannot resolve %s\n", #name); exit(3); } } while (0)

enum { THREADS = 8, CALLS = 200, N = 256 };
static CUcontext ctx;
static CUfunction fill;
static int errors;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg, bad = 0;
    CHECK(cuCtxSetCurrent(ctx));
    CUdeviceptr d;
    CHECK(cuMemAlloc(&d, N * 4));
    unsigned host[N];
    for (int i = 0; i < CALLS; i++) {
        int value = 0;
        CHECK(cuDeviceGetAttribute(&value, 1 /* MAX_THREADS_PER_BLOCK */, 0));
        if (value <= 0) bad++;
        if (i % 20 == 0) {  /* fill_u32(out, value, n) with this thread's value */
            unsigned v = (unsigned)(id * 1000 + i);
            unsigned long long n = N;
            void *params[] = {&d, &v, &n};
            CHECK(cuLaunchKernel(fill, 1, 1, 1, N, 1, 1, 0, 0, params, 0));
            CHECK(cuMemcpyDtoH(host, d, sizeof host));
            for (int k = 0; k < N; k++) bad += host[k] != v;
        }
    }
    CHECK(cuMemFree(d));
    pthread_mutex_lock(&lock);
    errors += bad;
    pthread_mutex_unlock(&lock);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return 64;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 3; }
    getProc = (CUresult (*)(const char *, void **, int, unsigned long long, int *))dlsym(lib, "cuGetProcAddress_v2");
    cuGetErrorName = (CUresult (*)(CUresult, const char **))dlsym(lib, "cuGetErrorName");
    if (!getProc || !cuGetErrorName) return 3;
    RESOLVE(cuInit, 2000); RESOLVE(cuDeviceGet, 2000); RESOLVE(cuDeviceGetCount, 2000);
    RESOLVE(cuDeviceGetAttribute, 2000); RESOLVE(cuDevicePrimaryCtxRetain, 7000);
    RESOLVE(cuCtxSetCurrent, 4000); RESOLVE(cuMemAlloc, 3020); RESOLVE(cuMemFree, 3020);
    RESOLVE(cuMemcpyHtoD, 3020); RESOLVE(cuMemcpyDtoH, 3020); RESOLVE(cuModuleLoadData, 2000);
    RESOLVE(cuModuleGetFunction, 2000); RESOLVE(cuLaunchKernel, 4000);
    RESOLVE(cuStreamCreate, 2000); RESOLVE(cuStreamSynchronize, 2000);
    RESOLVE(cuEventCreate, 2000); RESOLVE(cuEventRecord, 2000); RESOLVE(cuEventSynchronize, 2000);
    RESOLVE(cuEventElapsedTime, 2000);
    RESOLVE(cuGraphicsGLRegisterBuffer, 3000);

    FILE *f = fopen(argv[1], "rb");
    if (!f) return 3;
    static char image[1 << 20];
    size_t size = fread(image, 1, sizeof image, f);
    fclose(f);
    if (!size) return 3;

    CUdevice dev;
    CHECK(cuInit(0));
    /* the library's interpreter has started: the program's environment is as it was */
    const char *pythonpath = getenv("PYTHONPATH");
    printf("PYTHONPATH %s\n", pythonpath ? pythonpath : "(unset)");
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CUmodule mod;
    CUfunction add;
    CHECK(cuModuleLoadData(&mod, image));
    CHECK(cuModuleGetFunction(&fill, mod, "fill_u32"));
    CHECK(cuModuleGetFunction(&add, mod, "vector_add"));

    /* vector_add(a, b, c, n) with kernelParams, then with `extra` (one packed buffer) */
    float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) { a[i] = (float)i; b[i] = 0.5f; }
    CUdeviceptr da, db, dc;
    CHECK(cuMemAlloc(&da, sizeof a)); CHECK(cuMemAlloc(&db, sizeof b)); CHECK(cuMemAlloc(&dc, sizeof c));
    CHECK(cuMemcpyHtoD(da, a, sizeof a)); CHECK(cuMemcpyHtoD(db, b, sizeof b));
    CUstream stream;
    CUevent start, end;
    CHECK(cuStreamCreate(&stream, 0));
    CHECK(cuEventCreate(&start, 0)); CHECK(cuEventCreate(&end, 0));
    int n = N;
    void *params[] = {&da, &db, &dc, &n};
    CHECK(cuEventRecord(start, stream));
    CHECK(cuLaunchKernel(add, 1, 1, 1, N, 1, 1, 0, stream, params, 0));
    CHECK(cuEventRecord(end, stream));
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuEventSynchronize(end));
    float ms = -1;
    CHECK(cuEventElapsedTime(&ms, start, end));
    CHECK(cuMemcpyDtoH(c, dc, sizeof c));
    int bad = ms < 0;
    for (int i = 0; i < N; i++) bad += c[i] != a[i] + b[i];
    printf("kernelParams %s\n", bad ? "FAILED" : "ok");

    struct { CUdeviceptr a, b, c; int n; int pad; } packed = {db, db, dc, N, 0};
    size_t packed_size = 28;
    void *extra[] = {(void *)1 /* BUFFER_POINTER */, &packed, (void *)2 /* BUFFER_SIZE */,
                     &packed_size, (void *)0 /* END */};
    CHECK(cuLaunchKernel(add, 1, 1, 1, N, 1, 1, 0, 0, 0, extra));
    CHECK(cuMemcpyDtoH(c, dc, sizeof c));
    bad = 0;
    for (int i = 0; i < N; i++) bad += c[i] != 1.0f;
    printf("extra %s\n", bad ? "FAILED" : "ok");

    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&threads[i], 0, worker, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], 0);
    printf("threads %s (%d calls each)\n", errors ? "FAILED" : "ok", CALLS);

    CUresult unsupported = cuGraphicsGLRegisterBuffer(0, 0, 0);
    printf("unsupported %d\n", unsupported);

    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        int count = 0;
        CUresult r = cuDeviceGetCount(&count);
        if (r) fprintf(stderr, "child: cuDeviceGetCount -> %d\n", r);
        _exit(r == 0 && count > 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("child %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "FAILED");
    /* the parent's session survived the child: its memory is still there */
    CHECK(cuMemcpyDtoH(c, dc, sizeof c));
    bad = 0;
    for (int i = 0; i < N; i++) bad += c[i] != 1.0f;
    printf("parent after fork %s\n", bad ? "FAILED" : "ok");
    return 0;
}
