// The project's test kernels. Each has a host implementation of the same name in
// cricket_server/backends/sim/kernels.py, so the behaviour suite runs on both backends.
// Rebuild the committed cubin/fatbin/ptx with ./build.sh after editing.

struct node {
    node *next;
    int value;
};

__device__ int counter;                    // module global, zero at load
__device__ int bias = 7;                   // module global with an initial value

extern "C" __global__ void empty() {}

extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// One thread walks the list from head and stores the sum of its values.
extern "C" __global__ void list_sum(const node *head, int *out)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int sum = 0;
        for (const node *p = head; p != nullptr; p = p->next) sum += p->value;
        *out = sum;
    }
}

// Every thread adds v to the module global `counter`.
extern "C" __global__ void add_to_counter(int v) { atomicAdd(&counter, v); }

// out[i] = counter + bias for i < n (reads both module globals).
extern "C" __global__ void read_globals(int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = counter + bias;
}

// Grid-stride fill of n 32-bit words.
extern "C" __global__ void fill_u32(unsigned *out, unsigned value, unsigned long long n)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        out[i] = value;
}

// One thread stores value at p: with a bad p this raises CUDA_ERROR_ILLEGAL_ADDRESS.
extern "C" __global__ void poke(int *p, int value)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) *p = value;
}

// One thread spins until *flag is nonzero (set from another stream), then stores 1 in *done.
extern "C" __global__ void wait_flag(volatile int *flag, int *done)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        while (*flag == 0) {
        }
        *done = 1;
    }
}
