"""Framework workloads beyond a kernel and a matrix product, unmodified, through the native
libcuda.so.1 against the `cuda` backend with the client's GPU hidden: a PyTorch training loop
(autograd, Adam) checked against the same loop on the CPU; PyTorch's sort, top-k, scan,
softmax, random numbers, a side stream with events and pinned non-blocking copies, and a CUDA
graph captured and replayed, ending cleanly (tensors freed after the interpreter's exit);
CuPy's random numbers (cuRAND), sort and scan (CUB), a linear solve (cuSOLVER) and a
non-blocking stream with events; a Triton kernel on PyTorch tensors; PyTorch's convolutions
through cuDNN (whose handle keeps a flag in mapped host memory: cricket_client.mapped_host),
forward, backward and SGD steps against the CPU. cuFFT is an expected failure that says why:
the private table it asks for (TOOLS_MODULE) is served as read from the real driver, but has
not run on a GPU yet."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_native_frameworks import _importable, run_hidden, server

pytestmark = pytest.mark.gpu
__all__ = ["server"]  # the module's server fixture, shared

TORCH_TRAINING = """
import copy
import torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.manual_seed(0)
ref = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
model = copy.deepcopy(ref).cuda()
opt, opt_ref = torch.optim.Adam(model.parameters(), lr=1e-2), torch.optim.Adam(ref.parameters(), lr=1e-2)
g = torch.Generator().manual_seed(1)
x, t = torch.randn(32, 64, generator=g), torch.randint(0, 10, (32,), generator=g)
xc, tc = x.cuda(), t.cuda()
losses = []
for step in range(5):
    for m, o, xx, tt in ((model, opt, xc, tc), (ref, opt_ref, x, t)):
        o.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(xx), tt)
        loss.backward()
        o.step()
        losses.append(float(loss))
gpu, cpu = losses[0::2], losses[1::2]
assert all(abs(a - b) < 1e-3 for a, b in zip(gpu, cpu)), (gpu, cpu)
assert gpu[-1] < gpu[0], gpu
for p, q in zip(model.parameters(), ref.parameters()):
    assert torch.allclose(p.detach().cpu(), q.detach(), atol=1e-3), float((p.detach().cpu() - q.detach()).abs().max())
print("torch_train ok", [round(v, 4) for v in gpu])
"""

TORCH_OPERATIONS = """
import torch
g = torch.Generator().manual_seed(3)
a = torch.randn(10000, generator=g)
ac = a.cuda()
assert torch.equal(torch.sort(ac).values.cpu(), torch.sort(a).values)
assert torch.equal(torch.topk(ac, 5).values.cpu(), torch.topk(a, 5).values)
assert torch.allclose(torch.cumsum(ac, 0).cpu(), torch.cumsum(a, 0), atol=1e-3)
m = torch.randn(64, 100, generator=g)
assert torch.allclose(torch.softmax(m.cuda(), 1).cpu(), torch.softmax(m, 1), atol=1e-6)
r = torch.randn(1 << 20, device="cuda")
assert abs(float(r.mean())) < 0.01 and abs(float(r.std()) - 1) < 0.01
idx = torch.randint(0, 100, (1000,), generator=g)
want = torch.zeros(100).index_add_(0, idx, torch.ones(1000))
assert torch.equal(torch.zeros(100, device="cuda").index_add_(0, idx.cuda(), torch.ones(1000, device="cuda")).cpu(), want)
# a side stream, events, pinned memory and non_blocking copies
s = torch.cuda.Stream()
host = torch.arange(1 << 16, dtype=torch.float32).pin_memory()
with torch.cuda.stream(s):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    d = host.to("cuda", non_blocking=True) * 3
    back = torch.empty_like(host).pin_memory()
    back.copy_(d, non_blocking=True)
    end.record()
s.synchronize()
assert torch.equal(back, host * 3) and start.elapsed_time(end) >= 0
# a CUDA graph captured and replayed
static_in = torch.zeros(1024, device="cuda")
warm = torch.cuda.Stream()
warm.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(warm):
    static_out = static_in * 2 + 1
torch.cuda.current_stream().wait_stream(warm)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    static_out = static_in * 2 + 1
for v in (1.0, 5.0):
    static_in.fill_(v)
    graph.replay()
    assert float(static_out[7]) == 2 * v + 1
print("torch_ops ok")
"""

CUPY_LIBRARIES = """
import traceback
import cupy as cp
import numpy as np
rng = np.random.default_rng(4)
failed = []
def part(name, fn):
    try:
        fn()
        print(name, "ok", flush=True)
    except Exception as e:
        failed.append(name)
        print(name, "FAILED", type(e).__name__, str(e)[:200], flush=True)
def fft():
    x = rng.standard_normal(4096) + 1j * rng.standard_normal(4096)
    assert np.allclose(cp.asnumpy(cp.fft.fft(cp.asarray(x))), np.fft.fft(x), atol=1e-8)
def random():
    r = cp.random.default_rng(5).standard_normal(1 << 20, dtype=cp.float32)
    assert abs(float(r.mean())) < 0.01 and abs(float(r.std()) - 1) < 0.01
def curand():
    u = cp.random.rand(1 << 16)
    assert 0 <= float(u.min()) and float(u.max()) < 1
def sort():
    v = rng.standard_normal(100000).astype(np.float32)
    assert np.array_equal(cp.asnumpy(cp.sort(cp.asarray(v))), np.sort(v))
    assert np.allclose(cp.asnumpy(cp.cumsum(cp.asarray(v))), np.cumsum(v), atol=1e-1)
def solve():
    a = rng.standard_normal((64, 64)); b = rng.standard_normal(64)
    assert np.allclose(cp.asnumpy(cp.linalg.solve(cp.asarray(a), cp.asarray(b))), np.linalg.solve(a, b))
def streams():
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        e1, e2 = cp.cuda.Event(), cp.cuda.Event()
        e1.record(); w = cp.arange(1000) ** 2; e2.record()
    s.synchronize()
    assert cp.cuda.get_elapsed_time(e1, e2) >= 0 and int(w[999]) == 999 ** 2
for name, fn in (("fft", fft), ("random", random), ("curand", curand), ("sort", sort), ("solve", solve), ("streams", streams)):
    part(name, fn)
print("cupy_libs", "ok" if not failed else f"failed {failed}")
"""

TORCH_CONVOLUTION = """
import copy
import torch
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                          torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 4, 3), torch.nn.AdaptiveAvgPool2d(1))
ref = copy.deepcopy(net)
g = torch.Generator().manual_seed(2)
x = torch.randn(4, 3, 16, 16, generator=g, requires_grad=True)
y_cpu = ref(x); y_cpu.sum().backward(); grad_cpu = x.grad.clone()
netc = net.cuda(); xc = x.detach().cuda().requires_grad_()
y = netc(xc); y.sum().backward()
assert torch.allclose(y.detach().cpu(), y_cpu.detach(), atol=1e-4), float((y.detach().cpu() - y_cpu.detach()).abs().max())
assert torch.allclose(xc.grad.cpu(), grad_cpu, atol=1e-4)
# a few training steps (convolution weight gradients, SGD) against the same steps on the CPU
opt, opt_ref = torch.optim.SGD(netc.parameters(), lr=0.1), torch.optim.SGD(ref.parameters(), lr=0.1)
for step in range(3):
    for model, o, inp in ((netc, opt, xc.detach()), (ref, opt_ref, x.detach())):
        o.zero_grad(); model(inp).square().mean().backward(); o.step()
for p, q in zip(netc.parameters(), ref.parameters()):
    assert torch.allclose(p.detach().cpu(), q.detach(), atol=1e-3), float((p.detach().cpu() - q.detach()).abs().max())
print("torch_conv ok", torch._C._cudnn.getVersionInt())  # not cudnn.version(): it counts devices by CUDA_VISIBLE_DEVICES, emptied for the client
"""


def _run(server: object, framework: str, program: str) -> str:
    if not _importable(framework):
        pytest.skip(f"{framework} is not installed")
    done = run_hidden(server, program)  # type: ignore[arg-type]
    assert done.returncode == 0, done.stdout + done.stderr[-6000:]
    return done.stdout


def test_a_pytorch_training_loop_matches_the_cpu(server: object) -> None:
    assert _run(server, "torch", TORCH_TRAINING).startswith("torch_train ok")


def test_pytorch_operations_streams_pinned_copies_and_a_cuda_graph(server: object) -> None:
    assert _run(server, "torch", TORCH_OPERATIONS).strip() == "torch_ops ok"


@pytest.mark.parametrize("part", ["random", "curand", "sort", "solve", "streams"])
def test_cupy_libraries(server: object, part: str) -> None:
    lines = _run(server, "cupy", CUPY_LIBRARIES).splitlines()
    assert f"{part} ok" in lines, lines


def test_cupy_fft(server: object) -> None:
    """cuFFT asks for the private table TOOLS_MODULE and calls its slot 7 (each function of
    a module handed to its callback): a complex FFT of 4096 points matches NumPy's."""
    lines = _run(server, "cupy", CUPY_LIBRARIES).splitlines()
    assert "fft ok" in lines, lines


def test_a_pytorch_convolution_through_cudnn(server: object) -> None:
    assert _run(server, "torch", TORCH_CONVOLUTION).startswith("torch_conv ok")


TRITON_ADD = """
import torch
import triton
import triton.language as tl

@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    tl.store(out_ptr + i, tl.load(x_ptr + i, mask=mask) + tl.load(y_ptr + i, mask=mask), mask=mask)

n = 98432
x = torch.rand(n, device="cuda"); y = torch.rand(n, device="cuda")
out = torch.empty_like(x)
add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
assert torch.equal(out.cpu(), (x + y).cpu())
print("triton ok", torch.cuda.device_count())
"""
# PyTorch counts devices itself from CUDA_VISIBLE_DEVICES: an empty value is "no devices" to
# it (torch.cuda.device_count() 0, which Triton asks), whatever the driver says. A MIG UUID
# that names no device hides the local GPU from the local driver just as well, and PyTorch
# then asks the driver (the library) for the count.
NO_DEVICE = "MIG-GPU-00000000-0000-0000-0000-000000000000/0/0"


def test_a_triton_kernel_through_pytorch(server: object, tmp_path: Path) -> None:
    if not _importable("triton"):
        pytest.skip("triton is not installed")
    local = subprocess.run(
        [sys.executable, "-c", "from cuda.bindings import driver as d; print(d.cuInit(0)[0].name)"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "CUDA_VISIBLE_DEVICES": NO_DEVICE},
    )  # fmt: skip
    assert local.stdout.strip() == "CUDA_ERROR_NO_DEVICE", local.stdout + local.stderr  # hidden
    script = tmp_path / "triton_add.py"  # Triton reads its kernels' source from their file
    script.write_text(TRITON_ADD)
    done = run_hidden(server, "", hide=NO_DEVICE, script=script)  # type: ignore[arg-type]
    assert done.returncode == 0, done.stdout + done.stderr[-6000:]
    assert done.stdout.splitlines()[-1] == "triton ok 1"
