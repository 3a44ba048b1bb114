"""Reading kernels, parameter layouts and globals from nvcc's and NVRTC's cubins, fatbins, PTX."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_IMAGE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
    ParamInfo,
)
from cricket_server.backends.sim.cubin import (
    CUDA_ERROR_NO_BINARY_FOR_GPU,
    FATBIN_KIND_ELF,
    FATBIN_KIND_PTX,
    fatbin_entries,
    parse_image,
)

KERNELS = Path(__file__).resolve().parents[1] / "kernels"

P = ParamInfo
EXPECTED_PARAMS = {
    "empty": (),
    "vector_add": (P(0, 8), P(8, 8), P(16, 8), P(24, 4)),
    "saxpy": (P(0, 4), P(8, 8), P(16, 8), P(24, 4)),
    "list_sum": (P(0, 8), P(8, 8)),
    "add_to_counter": (P(0, 4),),
    "read_globals": (P(0, 8), P(8, 4)),
    "fill_u32": (P(0, 8), P(8, 4), P(16, 8)),
    "poke": (P(0, 8), P(8, 4)),
    "wait_flag": (P(0, 8), P(8, 8)),
}


def image(name: str) -> bytes:
    return (KERNELS / name).read_bytes()


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("test_kernels.sm_90.cubin", "cubin"),
        ("test_kernels.fatbin", "cubin"),  # the sm_90 ELF entry is preferred over the PTX
        ("test_kernels.ptx", "ptx"),
    ],
)
def test_nvcc_images(name: str, kind: str) -> None:
    module = parse_image(image(name))
    assert module.kind == kind
    assert module.arch == 90
    assert {k: v.params for k, v in module.kernels.items()} == EXPECTED_PARAMS
    assert module.kernels["vector_add"].param_bytes == 28
    assert module.globals["counter"].size == 4
    assert module.globals["counter"].init == bytes(4)
    assert module.globals["bias"].init == struct.pack("<i", 7)


def test_cubin_register_counts_come_from_nv_info() -> None:
    module = parse_image(image("test_kernels.sm_90.cubin"))
    regs = {name: k.num_regs for name, k in module.kernels.items()}
    assert all(isinstance(r, int) and 0 < r <= 255 for r in regs.values()), regs


def test_ptx_nul_terminated_as_cuModuleLoadData_gets_it() -> None:
    module = parse_image(image("test_kernels.ptx") + b"\0")
    assert set(module.kernels) == set(EXPECTED_PARAMS)


def test_fatbin_entries() -> None:
    entries = fatbin_entries(image("test_kernels.fatbin"))
    kinds = sorted((e.kind, e.arch) for e in entries)
    assert kinds == [(FATBIN_KIND_PTX, 90), (FATBIN_KIND_ELF, 90)]


def test_a_zstd_entry_reads_as_the_uncompressed_one() -> None:
    compressed = parse_image(image("test_kernels.compressed.fatbin"))
    plain = parse_image(image("test_kernels.sm_90.cubin"))
    assert {name: k.params for name, k in compressed.kernels.items()} == {
        name: k.params for name, k in plain.kernels.items()
    }


def test_an_entry_compressed_the_older_way_is_not_supported_and_named() -> None:
    cubin = image("test_kernels.sm_90.cubin")
    with pytest.raises(CudaError) as err:
        parse_image(make_fatbin([(FATBIN_KIND_ELF, 90, 0x2011, cubin)]))
    assert err.value.code == CUDA_ERROR_NOT_SUPPORTED
    assert "sm_90 ELF" in err.value.message and "compressed" in err.value.message


def test_a_zstd_flag_on_bytes_that_are_no_zstd_frame_is_an_invalid_image() -> None:
    cubin = image("test_kernels.sm_90.cubin")
    with pytest.raises(CudaError) as err:
        parse_image(make_fatbin([(FATBIN_KIND_ELF, 90, 0x8011, cubin)]))
    assert err.value.code == CUDA_ERROR_INVALID_IMAGE
    assert "zstd" in err.value.message


def test_garbage_is_an_invalid_image() -> None:
    with pytest.raises(CudaError) as err:
        parse_image(b"\x01\x02\x03\x04not a module")
    assert err.value.code == CUDA_ERROR_INVALID_IMAGE
    with pytest.raises(CudaError) as err:
        parse_image(b"\x7fELF" + bytes(60))
    assert err.value.code == CUDA_ERROR_INVALID_IMAGE


def test_other_architectures_have_no_binary() -> None:
    ptx = image("test_kernels.ptx").replace(b".target sm_90", b".target sm_100")
    with pytest.raises(CudaError) as err:
        parse_image(ptx)
    assert err.value.code == CUDA_ERROR_NO_BINARY_FOR_GPU


def test_ptx_struct_array_and_aligned_params() -> None:
    ptx = """
    .version 8.0
    .target sm_90
    .address_size 64
    .visible .global .align 8 .b8 table[24] = {1, 2, 3};
    .global .align 4 .f32 scale = 0f3F800000;
    .extern .global .align 4 .u32 elsewhere;
    .visible .entry k(
        .param .u8 k_param_0,
        .param .align 8 .b8 k_param_1[12],
        .param .u64 .ptr .global .align 16 k_param_2,
        .param .f64 k_param_3
    )
    .maxntid 128, 1, 1
    {
        ret;
    }
    .entry no_parens
    {
        ret;
    }
    """
    module = parse_image(ptx.encode())
    assert module.kernels["k"].params == (P(0, 1), P(8, 12), P(24, 8), P(32, 8))
    assert module.kernels["k"].max_threads == 128
    assert module.kernels["no_parens"].params == ()
    assert module.globals["table"].init == bytes([1, 2, 3]) + bytes(21)
    assert module.globals["scale"].init == struct.pack("<f", 1.0)
    assert "elsewhere" not in module.globals


# -- NVRTC at test time ------------------------------------------------------------------------
NVRTC_SOURCE = r"""
struct pair { double x; int y; };
__device__ float table[16];
__device__ long long seed = 42;
extern "C" __global__ void plain(const float *in, float *out, int n, double scale) {}
extern "C" __global__ void by_value(pair p, char c, short s, float *out) {}
__global__ void mangled(int *p, unsigned long long n) {}
"""


def nvrtc_compile(source: str, want_cubin: bool) -> bytes:
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"test.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    arch = b"--gpu-architecture=sm_90" if want_cubin else b"--gpu-architecture=compute_90"
    (err,) = nvrtc.nvrtcCompileProgram(prog, 2, [arch, b"-default-device"])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        pytest.fail(log.decode())
    if want_cubin:
        err, size = nvrtc.nvrtcGetCUBINSize(prog)
        out = b" " * size
        (err,) = nvrtc.nvrtcGetCUBIN(prog, out)
    else:
        err, size = nvrtc.nvrtcGetPTXSize(prog)
        out = b" " * size
        (err,) = nvrtc.nvrtcGetPTX(prog, out)
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    nvrtc.nvrtcDestroyProgram(prog)
    return out


@pytest.mark.parametrize("want_cubin", [True, False], ids=["cubin", "ptx"])
def test_nvrtc_images(want_cubin: bool) -> None:
    module = parse_image(nvrtc_compile(NVRTC_SOURCE, want_cubin))
    assert module.kind == ("cubin" if want_cubin else "ptx")
    kernels = module.kernels
    assert kernels["plain"].params == (P(0, 8), P(8, 8), P(16, 4), P(24, 8))
    assert kernels["by_value"].params == (P(0, 16), P(16, 1), P(18, 2), P(24, 8))
    mangled = [name for name in kernels if name.startswith("_Z") and "mangled" in name]
    assert len(mangled) == 1
    assert kernels[mangled[0]].params == (P(0, 8), P(8, 8))
    assert module.globals["table"].size == 64
    assert module.globals["seed"].init == struct.pack("<q", 42)


def make_fatbin(entries: list[tuple[int, int, int, bytes]]) -> bytes:
    """A fatbin of (kind, arch, flags, payload) entries, laid out as nvcc writes them."""
    body = b""
    for kind, arch, flags, payload in entries:
        header = bytearray(64)
        struct.pack_into("<HHIQ", header, 0, kind, 0x0101, 64, len(payload))
        struct.pack_into("<I", header, 28, arch)
        struct.pack_into("<Q", header, 40, flags)
        body += bytes(header) + payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def test_fatbin_falls_back_to_uncompressed_ptx() -> None:
    ptx = image("test_kernels.ptx") + b"\0"
    cubin = image("test_kernels.sm_90.cubin")
    fat = make_fatbin([(FATBIN_KIND_ELF, 90, 0x2011, cubin[:64]), (FATBIN_KIND_PTX, 90, 0x11, ptx)])
    module = parse_image(fat)
    assert module.kind == "ptx" and set(module.kernels) == set(EXPECTED_PARAMS)


def test_fatbin_prefers_the_newest_matching_cubin() -> None:
    cubin = image("test_kernels.sm_90.cubin")
    fat = make_fatbin(
        [(FATBIN_KIND_PTX, 90, 0x11, b"garbage\0"), (FATBIN_KIND_ELF, 90, 0x11, cubin)]
    )
    assert parse_image(fat).kind == "cubin"
    with pytest.raises(CudaError) as err:
        parse_image(make_fatbin([(FATBIN_KIND_ELF, 80, 0x11, cubin)]))
    assert err.value.code == CUDA_ERROR_NO_BINARY_FOR_GPU
    assert "sm_80 ELF" in err.value.message
