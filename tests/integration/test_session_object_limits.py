"""Per-session limits on streams, events, modules and contexts (--max-streams, --max-events,
--max-modules, --max-contexts): beyond them CUDA_ERROR_OUT_OF_MEMORY naming the option, and
the server goes on serving (on the backend CRICKET_TEST_BACKEND names, sim by default); idle
sim streams hold no thread."""

from __future__ import annotations

from pathlib import Path

import pytest
from server_harness import BACKEND, running_server, wait_for

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult
KERNELS = Path(__file__).resolve().parents[1] / "kernels"


def session(address: str) -> cricket_client.Connection:
    conn = cricket_client.connect(address, make_default=False, timeout=60)
    with conn.active():
        assert cuda.cuInit(0) == (E.CUDA_SUCCESS,)
        _, ctx = cuda.cuDevicePrimaryCtxRetain(0)
        assert cuda.cuCtxSetCurrent(ctx) == (E.CUDA_SUCCESS,)
    return conn


def a_module_image() -> bytes:
    return next(p for p in sorted(KERNELS.glob("*.cubin"))).read_bytes()


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_objects_beyond_the_session_limits_are_out_of_memory(tmp_path: Path, mode: str) -> None:
    options = ("--max-streams", "8", "--max-events", "5", "--max-modules", "2",
               "--max-contexts", "2")  # fmt: skip
    with running_server(tmp_path, *options, isolation=mode, backend=BACKEND) as srv:
        conn = session(srv.address)
        with conn.active():
            streams = [cuda.cuStreamCreate(0)[1] for _ in range(8)]
            assert cuda.cuStreamCreate(0)[0] == E.CUDA_ERROR_OUT_OF_MEMORY
            message = cricket_client.last_error_message()
            assert "cuStreamCreate: this session holds 8 streams" in message
            assert "--max-streams 8" in message
            assert cuda.cuStreamDestroy(streams.pop()) == (E.CUDA_SUCCESS,)
            err, stream = cuda.cuStreamCreate(0)  # room again after a destroy
            assert err == E.CUDA_SUCCESS

            events = [cuda.cuEventCreate(0) for _ in range(5)]
            assert all(err == E.CUDA_SUCCESS for err, _ in events)
            assert cuda.cuEventCreate(0)[0] == E.CUDA_ERROR_OUT_OF_MEMORY
            assert "--max-events 5" in cricket_client.last_error_message()

            image = a_module_image()
            for _ in range(2):
                assert cuda.cuModuleLoadData(image)[0] == E.CUDA_SUCCESS
            assert cuda.cuModuleLoadData(image)[0] == E.CUDA_ERROR_OUT_OF_MEMORY
            assert "--max-modules 2" in cricket_client.last_error_message()

            _, ctx = cuda.cuCtxGetCurrent()
            made = [cuda.cuCtxCreate(None, 0, 0) for _ in range(2)]
            assert all(err == E.CUDA_SUCCESS for err, _ in made)
            assert cuda.cuCtxCreate(None, 0, 0)[0] == E.CUDA_ERROR_OUT_OF_MEMORY
            assert "--max-contexts 2" in cricket_client.last_error_message()
        conn.close()
        other = session(srv.address)  # the server still serves a new client
        with other.active():
            assert cuda.cuStreamCreate(0)[0] == E.CUDA_SUCCESS
        other.close()
        assert srv.process.poll() is None


def test_idle_sim_streams_hold_no_thread(tmp_path: Path) -> None:
    with running_server(tmp_path, isolation="thread", backend="sim") as srv:
        conn = session(srv.address)
        with conn.active():
            cuda.cuStreamSynchronize(0)
            threads_before = srv.usage()[0]
            streams = [cuda.cuStreamCreate(0)[1] for _ in range(300)]
            assert srv.usage()[0] < threads_before + 20
            _, ptr = cuda.cuMemAlloc(4096)
            for stream in streams[:50]:  # work on them starts threads, which end with it
                assert cuda.cuStreamQuery(stream) == (E.CUDA_SUCCESS,)
                assert cuda.cuMemsetD8Async(ptr, 7, 4096, stream) == (E.CUDA_SUCCESS,)
            assert cuda.cuCtxSynchronize() == (E.CUDA_SUCCESS,)
            wait_for(lambda: srv.usage()[0] < threads_before + 20, "stream threads to end")
        conn.close()
