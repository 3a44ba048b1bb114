/* Per-call cost of the native libcuda.so.1 from C: cuDeviceGetAttribute (a synchronous small
 * call) and empty launches (pipelined). Prints one JSON object.
 *     native_calls CUBIN CALLS LAUNCHES */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int CUresult;
typedef void *CUcontext, *CUmodule, *CUfunction;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define SYM(type, name) __typeof__(type) name = (__typeof__(type))dlsym(lib, #name); if (!name) return 3
int main(int argc, char **argv) {
    if (argc < 4) return 64;
    int calls = atoi(argv[2]), launches = atoi(argv[3]);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) return 3;
    SYM(CUresult (*)(unsigned), cuInit);
    SYM(CUresult (*)(int *, int), cuDeviceGet);
    SYM(CUresult (*)(int *, int, int), cuDeviceGetAttribute);
    SYM(CUresult (*)(CUcontext *, int), cuDevicePrimaryCtxRetain);
    SYM(CUresult (*)(CUcontext), cuCtxSetCurrent);
    SYM(CUresult (*)(void), cuCtxSynchronize);
    SYM(CUresult (*)(CUmodule *, const void *), cuModuleLoadData);
    SYM(CUresult (*)(CUfunction *, CUmodule, const char *), cuModuleGetFunction);
    SYM(CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, void *, void **, void **), cuLaunchKernel);
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 3;
    static char image[1 << 20];
    if (!fread(image, 1, sizeof image, f)) return 3;
    fclose(f);
    int dev, value;
    CUcontext ctx;
    CUmodule mod;
    CUfunction empty;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuModuleLoadData(&mod, image) ||
        cuModuleGetFunction(&empty, mod, "empty"))
        return 2;
    double *samples = malloc(sizeof(double) * calls);
    for (int i = 0; i < 200; i++) cuDeviceGetAttribute(&value, 1, dev);
    for (int i = 0; i < calls; i++) {
        double t0 = now();
        if (cuDeviceGetAttribute(&value, 1, dev)) return 2;
        samples[i] = (now() - t0) * 1e6;
    }
    qsort(samples, calls, sizeof(double), cmp);
    if (cuCtxSynchronize()) return 2;
    double t0 = now();
    for (int i = 0; i < launches; i++)
        if (cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0)) return 2;
    if (cuCtxSynchronize()) return 2;
    double rate = launches / (now() - t0);
    printf("{\"attribute_median_us\": %.3f, \"attribute_p99_us\": %.3f, \"launch_rate\": %.1f}\n",
           samples[calls / 2], samples[calls * 99 / 100], rate);
    return 0;
}
