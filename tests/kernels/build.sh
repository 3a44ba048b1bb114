#!/usr/bin/env bash
# Rebuild the committed test-kernel images from test_kernels.cu (nvcc 12.8+ or 13).
#   test_kernels.sm_90.cubin   ELF for sm_90
#   test_kernels.fatbin        sm_90 ELF + compute_90 PTX
#   test_kernels.ptx           compute_90 PTX
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
src=test_kernels.cu
"$NVCC" -cubin -arch=sm_90 -o test_kernels.sm_90.cubin "$src"
"$NVCC" -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
    -o test_kernels.fatbin "$src"
"$NVCC" -ptx -arch=compute_90 -o test_kernels.ptx "$src"
# A fatbin whose only entry is compressed (zstd: CUDA 13's form, which the sim decompresses).
"$NVCC" -fatbin -gencode arch=compute_90,code=sm_90 -Xfatbin -compress-all \
    -o test_kernels.compressed.fatbin "$src"
