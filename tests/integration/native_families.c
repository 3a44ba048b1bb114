/* A C program over the later driver families, built against the project's own declarations
 * (cricket_cuda.h, written by the test from cricket_client.native.signatures.c_declarations())
 * and calling the library by the names cuda.h maps to: memory pools, stream capture, a graph
 * built from CUDA_KERNEL_NODE_PARAMS / CUDA_MEMSET_NODE_PARAMS / CUDA_MEMCPY3D, virtual memory
 * (CUmemAllocationProp, CUmemAccessDesc), a CUDA_MEMCPY2D copy, and a link.
 *
 *     native_families CUBIN       (exit status 0 and one line per result) */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cricket_cuda.h"

#define FUNCTIONS(X) X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) \
    X(cuModuleLoadData) X(cuModuleGetFunction) X(cuStreamCreate) X(cuStreamSynchronize) \
    X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemcpyHtoD_v2) X(cuMemcpyDtoH_v2) X(cuMemsetD32Async) \
    X(cuLaunchKernel) X(cuGetErrorName) X(cuCtxGetCurrent) \
    X(cuDeviceGetDefaultMemPool) X(cuMemPoolSetAttribute) X(cuMemPoolGetAttribute) \
    X(cuMemAllocFromPoolAsync) X(cuMemFreeAsync) \
    X(cuStreamBeginCapture_v2) X(cuStreamGetCaptureInfo_v3) X(cuStreamEndCapture) \
    X(cuGraphGetNodes) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphExecDestroy) \
    X(cuGraphDestroy) X(cuGraphCreate) X(cuGraphAddKernelNode_v2) X(cuGraphAddMemsetNode) \
    X(cuGraphAddMemcpyNode) \
    X(cuMemGetAllocationGranularity) X(cuMemAddressReserve) X(cuMemCreate) X(cuMemMap) \
    X(cuMemSetAccess) X(cuMemUnmap) X(cuMemRelease) X(cuMemAddressFree) \
    X(cuMemAllocPitch_v2) X(cuMemcpy2D_v2) \
    X(cuLinkCreate_v2) X(cuLinkAddData_v2) X(cuLinkComplete) X(cuLinkDestroy)
#define POINTER(name) static __typeof__(name) *p_##name;
FUNCTIONS(POINTER)

#define CHECK(call) do { CUresult r_ = (call); if (r_) { const char *n_ = "?"; \
    p_cuGetErrorName(r_, &n_); fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #call, n_); \
    exit(2); } } while (0)

enum { N = 256 };

static unsigned sum(CUdeviceptr d) {
    unsigned host[N], total = 0;
    CHECK(p_cuMemcpyDtoH_v2(host, d, sizeof host));
    for (int i = 0; i < N; i++) total += host[i];
    return total;
}

int main(int argc, char **argv) {
    if (argc != 2) return 1;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 3; }
#define RESOLVE(name) if (!(p_##name = (__typeof__(name) *)dlsym(lib, #name))) { \
        fprintf(stderr, "no %s\n", #name); return 3; }
    FUNCTIONS(RESOLVE)
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 4;
    static char cubin[1 << 20];
    size_t cubin_size = fread(cubin, 1, sizeof cubin, f);
    fclose(f);

    CUdevice dev; CUcontext ctx; CUmodule mod; CUfunction fill; CUstream stream;
    CHECK(p_cuInit(0));
    CHECK(p_cuDeviceGet(&dev, 0));
    CHECK(p_cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(p_cuCtxSetCurrent(ctx));
    CHECK(p_cuModuleLoadData(&mod, cubin));
    CHECK(p_cuModuleGetFunction(&fill, mod, "fill_u32"));
    CHECK(p_cuStreamCreate(&stream, 1));

    /* memory pools */
    CUmemoryPool pool;
    unsigned long long threshold = 1 << 20, read_back = 0;
    CHECK(p_cuDeviceGetDefaultMemPool(&pool, dev));
    CHECK(p_cuMemPoolSetAttribute(pool, 4, &threshold)); /* RELEASE_THRESHOLD */
    CHECK(p_cuMemPoolGetAttribute(pool, 4, &read_back));
    CUdeviceptr d;
    CHECK(p_cuMemAllocFromPoolAsync(&d, 4 * N, pool, stream));
    printf("pool threshold %llu\n", read_back);

    /* stream capture: a memset and a launch */
    unsigned value = 3; unsigned long long n = N;
    void *params[] = {&d, &value, &n};
    int status = 0; cuuint64_t id = 0; CUgraph graph; const CUgraphNode *deps; const CUgraphEdgeData *edges;
    size_t count = 0;
    CHECK(p_cuStreamBeginCapture_v2(stream, 0));
    CHECK(p_cuMemsetD32Async(d, 1, N, stream));
    CHECK(p_cuLaunchKernel(fill, N / 128, 1, 1, 128, 1, 1, 0, stream, params, NULL));
    CHECK(p_cuStreamGetCaptureInfo_v3(stream, &status, &id, &graph, &deps, &edges, &count));
    printf("capture status %d dependencies %zu\n", status, count);
    CHECK(p_cuStreamEndCapture(stream, &graph));
    CHECK(p_cuGraphGetNodes(graph, NULL, &count));
    CUgraphExec exec;
    CHECK(p_cuGraphInstantiateWithFlags(&exec, graph, 0));
    CHECK(p_cuGraphLaunch(exec, stream));
    CHECK(p_cuStreamSynchronize(stream));
    printf("captured nodes %zu sum %u\n", count, sum(d));
    CHECK(p_cuGraphExecDestroy(exec));
    CHECK(p_cuGraphDestroy(graph));

    /* a graph from the C structs: memset -> kernel -> copy */
    CUdeviceptr e;
    CHECK(p_cuMemAlloc_v2(&e, 4 * N));
    CHECK(p_cuCtxGetCurrent(&ctx));
    CHECK(p_cuGraphCreate(&graph, 0));
    CUDA_MEMSET_NODE_PARAMS ms = {.dst = d, .value = 0, .elementSize = 4, .width = N, .height = 1};
    CUgraphNode a, b, c;
    CHECK(p_cuGraphAddMemsetNode(&a, graph, NULL, 0, &ms, ctx));
    value = 9;
    CUDA_KERNEL_NODE_PARAMS kp = {.func = fill, .gridDimX = N / 128, .gridDimY = 1, .gridDimZ = 1,
                                  .blockDimX = 128, .blockDimY = 1, .blockDimZ = 1,
                                  .kernelParams = params};
    CHECK(p_cuGraphAddKernelNode_v2(&b, graph, &a, 1, &kp));
    CUDA_MEMCPY3D cp;
    memset(&cp, 0, sizeof cp);
    cp.srcMemoryType = cp.dstMemoryType = 2; /* DEVICE */
    cp.srcDevice = d; cp.dstDevice = e;
    cp.WidthInBytes = 4 * N; cp.Height = 1; cp.Depth = 1;
    CHECK(p_cuGraphAddMemcpyNode(&c, graph, &b, 1, &cp, ctx));
    CHECK(p_cuGraphInstantiateWithFlags(&exec, graph, 0));
    CHECK(p_cuGraphLaunch(exec, stream));
    CHECK(p_cuStreamSynchronize(stream));
    printf("built graph sum %u\n", sum(e));
    CHECK(p_cuGraphExecDestroy(exec));
    CHECK(p_cuGraphDestroy(graph));
    CHECK(p_cuMemFreeAsync(d, stream));
    CHECK(p_cuStreamSynchronize(stream));

    /* virtual memory */
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = 1; prop.location.type = 1; prop.location.id = dev; /* PINNED, DEVICE */
    size_t granularity = 0;
    CHECK(p_cuMemGetAllocationGranularity(&granularity, &prop, 0));
    CUdeviceptr va; CUmemGenericAllocationHandle handle;
    CHECK(p_cuMemAddressReserve(&va, granularity, 0, 0, 0));
    CHECK(p_cuMemCreate(&handle, granularity, &prop, 0));
    CHECK(p_cuMemMap(va, granularity, 0, handle, 0));
    CUmemAccessDesc access = {.location = {.type = 1, .id = dev}, .flags = 3};
    CHECK(p_cuMemSetAccess(va, granularity, &access, 1));
    unsigned words[N];
    for (int i = 0; i < N; i++) words[i] = 2;
    CHECK(p_cuMemcpyHtoD_v2(va, words, sizeof words));
    printf("mapped sum %u\n", sum(va));
    CHECK(p_cuMemUnmap(va, granularity));
    CHECK(p_cuMemRelease(handle));
    CHECK(p_cuMemAddressFree(va, granularity));

    /* a pitched 2D copy there and back */
    enum { W = 40, H = 6 };
    unsigned char src[H][W], back[H][W];
    for (int y = 0; y < H; y++) for (int x = 0; x < W; x++) src[y][x] = (unsigned char)(y * W + x);
    CUdeviceptr pitched; size_t pitch;
    CHECK(p_cuMemAllocPitch_v2(&pitched, &pitch, W, H, 4));
    CUDA_MEMCPY2D c2 = {.srcMemoryType = 1, .srcHost = src, .srcPitch = W, .dstMemoryType = 2,
                        .dstDevice = pitched, .dstPitch = pitch, .WidthInBytes = W, .Height = H};
    CHECK(p_cuMemcpy2D_v2(&c2));
    CUDA_MEMCPY2D c3 = {.srcMemoryType = 2, .srcDevice = pitched, .srcPitch = pitch,
                        .dstMemoryType = 1, .dstHost = back, .dstPitch = W, .WidthInBytes = W,
                        .Height = H};
    CHECK(p_cuMemcpy2D_v2(&c3));
    printf("2D copy %s\n", memcmp(src, back, sizeof src) ? "differs" : "ok");

    /* a link of one cubin */
    CUlinkState state; void *image; size_t image_size;
    CHECK(p_cuLinkCreate_v2(0, NULL, NULL, &state));
    /* A real driver refuses to link a whole-program (not relocatable) cubin: 209,
       CUDA_ERROR_NO_BINARY_FOR_GPU, at cuLinkAddData locally, at cuLinkComplete remotely
       (the inputs travel together); sim passes one cubin through. */
    CUresult added = p_cuLinkAddData_v2(state, 0, cubin, cubin_size, "kernels.cubin", 0, NULL, NULL);
    CUresult completed = added ? added : p_cuLinkComplete(state, &image, &image_size);
    if (completed == 209) {
        printf("link refused: not relocatable\n");
    } else {
        CHECK(completed);
        CUmodule linked;
        CHECK(p_cuModuleLoadData(&linked, image));
        printf("linked %s\n", image_size == cubin_size ? "ok" : "differs");
    }
    CHECK(p_cuLinkDestroy(state));
    CHECK(p_cuMemFree_v2(e));
    CHECK(p_cuMemFree_v2(pitched));
    return 0;
}
