// A CUDA runtime program (built by the test with nvcc, static or shared runtime): device count,
// memory, copies and a <<<>>> launch of a kernel the sim knows by name (vector_add of
// tests/kernels/test_kernels.cu, same signature). Prints one line per step; stops at the first
// failing call.
#include <cstdio>
#include <cuda_runtime.h>

extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

static int step(const char *what, cudaError_t e) {
    printf("%s: %d (%s)\n", what, (int)e, cudaGetErrorName(e));
    return e != cudaSuccess;
}

int main() {
    int n = 0;
    if (step("cudaGetDeviceCount", cudaGetDeviceCount(&n))) return 1;
    printf("devices %d\n", n);
    const int N = 1024;
    float h[N], out[N];
    for (int i = 0; i < N; i++) h[i] = (float)i;
    float *a, *b, *c;
    if (step("cudaMalloc", cudaMalloc(&a, sizeof h))) return 1;
    if (step("cudaMalloc", cudaMalloc(&b, sizeof h))) return 1;
    if (step("cudaMalloc", cudaMalloc(&c, sizeof h))) return 1;
    if (step("cudaMemcpy", cudaMemcpy(a, h, sizeof h, cudaMemcpyHostToDevice))) return 1;
    if (step("cudaMemcpy", cudaMemcpy(b, h, sizeof h, cudaMemcpyHostToDevice))) return 1;
    vector_add<<<N / 256, 256>>>(a, b, c, N);
    if (step("launch", cudaGetLastError())) return 1;
    if (step("cudaMemcpy", cudaMemcpy(out, c, sizeof out, cudaMemcpyDeviceToHost))) return 1;
    printf("vector_add ok %d\n", out[0] == 0.0f && out[N - 1] == 2.0f * (N - 1));
    return 0;
}
