// The kernel of vector_add_cubin.py, prebuilt so that the client needs neither NVRTC nor a
// CUDA toolkit. Rebuild: nvcc -arch=sm_90 -cubin -o vector_add.sm_90.cubin vector_add.cu
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
