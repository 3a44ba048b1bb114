"""Session layer over a fake backend: ownership, handles, contexts, memory, freeing."""

from __future__ import annotations

import logging

import pytest
from test_session_fakes import ARENA_SIZE, FakeSession, make_manager

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_FOUND,
    CUDA_ERROR_NOT_INITIALIZED,
    CUDA_ERROR_NOT_SUPPORTED,
    PER_THREAD_STREAM,
    CudaError,
)
from cricket_server.resources import HandleKind, kind_of
from cricket_server.session import PROTOCOL_VERSION, Session, SessionManager, negotiate_version
from cricket_server.session_memory import (
    PA_BUFFER_ID,
    PA_CONTEXT,
    PA_DEVICE_ORDINAL,
    PA_HOST_POINTER,
    PA_MEMORY_TYPE,
    PA_RANGE_SIZE,
    PA_RANGE_START_ADDR,
)

MODULE = b"MOD fake cubin"


def ready(manager: SessionManager, name: str = "client") -> Session:
    """A session after cuInit with device 0's primary context current."""
    s = manager.open("127.0.0.1:1", name)
    s.init(0)
    s.ctx_set_current(s.primary_ctx_retain(0))
    return s


def fake(s: Session) -> FakeSession:
    assert isinstance(s.bsession, FakeSession)
    return s.bsession


def code(exc: pytest.ExceptionInfo[CudaError]) -> int:
    return exc.value.code


@pytest.fixture
def manager() -> SessionManager:
    return make_manager()[0]


# -- initialization ---------------------------------------------------------------------------


def test_calls_before_cuinit_are_not_initialized(manager: SessionManager) -> None:
    s = manager.open("peer", "c")
    for call in (s.device_count, lambda: s.primary_ctx_retain(0), lambda: s.mem_alloc(16)):
        with pytest.raises(CudaError) as e:
            call()
        assert code(e) == CUDA_ERROR_NOT_INITIALIZED
    with pytest.raises(CudaError) as e:
        s.init(1)
    assert code(e) == CUDA_ERROR_INVALID_VALUE
    s.init(0)
    assert s.device_count() == 2


def test_version_negotiation() -> None:
    assert negotiate_version(1) == 1  # a client of version 1 is served as version 1
    assert negotiate_version(2) == 2
    assert negotiate_version(7) == PROTOCOL_VERSION == 2
    with pytest.raises(CudaError, match="client protocol version 0"):
        negotiate_version(0)


def test_unknown_device_is_invalid_device(manager: SessionManager) -> None:
    s = manager.open("peer", "c")
    s.init(0)
    with pytest.raises(CudaError, match="device 5 does not exist") as e:
        s.primary_ctx_retain(5)
    assert code(e) == CUDA_ERROR_INVALID_DEVICE


# -- contexts ---------------------------------------------------------------------------------


def test_no_current_context_is_invalid_context(manager: SessionManager) -> None:
    s = manager.open("peer", "c")
    s.init(0)
    assert s.ctx_get_current() == 0
    for call in (
        lambda: s.mem_alloc(16),
        s.ctx_synchronize,
        s.ctx_get_device,
        lambda: s.stream_create(0),
    ):
        with pytest.raises(CudaError) as e:
            call()
        assert code(e) == CUDA_ERROR_INVALID_CONTEXT
    with pytest.raises(CudaError) as e:
        s.ctx_pop_current()
    assert code(e) == CUDA_ERROR_INVALID_CONTEXT


def test_context_stack(manager: SessionManager) -> None:
    s = manager.open("peer", "c")
    s.init(0)
    a = s.ctx_create(0, 0)  # pushes
    assert s.ctx_get_current() == a and s.ctx_get_device() == 0
    b = s.ctx_create(0, 1)
    assert kind_of(a) is HandleKind.CONTEXT and a != b
    assert s.ctx_get_current() == b and s.ctx_get_device() == 1
    assert s.ctx_pop_current() == b
    assert s.ctx_get_current() == a
    s.ctx_push_current(b)
    s.ctx_set_current(a)  # replaces the top
    assert s.ctx_pop_current() == a
    assert s.ctx_get_current() == a  # the first a is still below
    s.ctx_set_current(0)  # unbinds: pops
    assert s.ctx_get_current() == 0
    assert fake(s).devices == [0, 1, 0, 1, 0]  # told on every device change, only then


def test_ctx_destroy_frees_what_it_made_and_pops_it(manager: SessionManager) -> None:
    s = manager.open("peer", "c")
    s.init(0)
    primary = s.primary_ctx_retain(0)
    s.ctx_set_current(primary)
    keep = s.mem_alloc(100)
    ctx = s.ctx_create(0, 0)
    ptr = s.mem_alloc(4096)
    stream = s.stream_create(0)
    module = s.module_load(MODULE, {})
    func = s.module_get_function(module, "add")
    assert len(fake(s).live) == 2
    s.ctx_destroy(ctx)
    assert s.ctx_get_current() == primary
    assert fake(s).live == set()
    assert s.find(ptr) is None and s.find(keep) is not None
    for kind, handle in ((HandleKind.STREAM, stream), (HandleKind.FUNCTION, func)):
        assert handle not in s.handles, kind
    with pytest.raises(CudaError) as e:
        s.ctx_set_current(ctx)
    assert code(e) == CUDA_ERROR_INVALID_CONTEXT
    with pytest.raises(CudaError, match="primary context") as e:
        s.ctx_destroy(primary)
    assert code(e) == CUDA_ERROR_INVALID_CONTEXT


def test_primary_context_retain_release_reset(manager: SessionManager) -> None:
    s = manager.open("peer", "c")
    s.init(0)
    assert s.primary_ctx_get_state(0) == (0, False)
    for bad in (3, 0x100):
        with pytest.raises(CudaError, match="invalid context flags") as e:
            s.primary_ctx_set_flags(0, bad)
        assert code(e) == CUDA_ERROR_INVALID_VALUE
    s.primary_ctx_set_flags(0, 4)
    p = s.primary_ctx_retain(0)
    assert s.primary_ctx_retain(0) == p  # one primary context per device
    assert s.primary_ctx_get_state(0) == (4, True)
    s.ctx_set_current(p)
    ptr = s.mem_alloc(64)
    s.primary_ctx_reset(0)  # frees, keeps the retain count
    assert s.find(ptr) is None
    assert s.primary_ctx_get_state(0) == (0, True)
    ptr = s.mem_alloc(64)
    s.primary_ctx_release(0)
    assert s.find(ptr) is not None  # still retained once
    s.primary_ctx_release(0)
    assert s.find(ptr) is None
    assert s.primary_ctx_get_state(0) == (0, False)
    with pytest.raises(CudaError, match="released") as e:
        s.mem_alloc(64)  # still current, but released
    assert code(e) == CUDA_ERROR_INVALID_CONTEXT
    with pytest.raises(CudaError, match="not retained") as e:
        s.primary_ctx_release(0)
    assert code(e) == CUDA_ERROR_INVALID_CONTEXT


# -- handles ----------------------------------------------------------------------------------


def test_handles_are_kind_tagged_and_never_reused(manager: SessionManager) -> None:
    s = ready(manager)
    streams = [s.stream_create(0) for _ in range(3)]
    event = s.event_create(0)
    assert {kind_of(h) for h in streams} == {HandleKind.STREAM}
    assert kind_of(event) is HandleKind.EVENT
    for h in streams:
        s.stream_destroy(h)
    again = s.stream_create(0)
    assert again not in streams and again not in (0, 2)
    with pytest.raises(CudaError, match="is unknown or already destroyed") as e:
        s.stream_synchronize(streams[0])
    assert code(e) == CUDA_ERROR_INVALID_HANDLE
    with pytest.raises(CudaError, match="is an event handle, not a stream handle") as e:
        s.stream_synchronize(event)  # an event passed as a stream
    assert code(e) == CUDA_ERROR_INVALID_HANDLE
    with pytest.raises(CudaError) as e:
        s.event_record(again, 0)  # a stream passed as an event
    assert code(e) == CUDA_ERROR_INVALID_HANDLE


def test_default_streams(manager: SessionManager) -> None:
    s = ready(manager)
    s.stream_synchronize(0)
    s.stream_synchronize(2)
    assert fake(s).calls[-2:] == [
        ("stream_synchronize", None),
        ("stream_synchronize", PER_THREAD_STREAM),
    ]


def test_other_sessions_handles_are_refused_and_logged(
    manager: SessionManager, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = ready(manager, "a"), ready(manager, "b")
    stream = a.stream_create(0)
    module = a.module_load(MODULE, {})
    ctx = a.ctx_get_current()
    caplog.set_level(logging.WARNING, "cricket_server.resources")
    with pytest.raises(CudaError, match="not owned by this session") as e:
        b.stream_synchronize(stream)
    assert f"{a.id:x}" not in str(e.value)
    assert code(e) == CUDA_ERROR_INVALID_HANDLE
    with pytest.raises(CudaError) as e:
        b.module_get_function(module, "add")
    assert code(e) == CUDA_ERROR_INVALID_HANDLE
    with pytest.raises(CudaError) as e:
        b.ctx_set_current(ctx)
    assert code(e) == CUDA_ERROR_INVALID_CONTEXT
    assert f"session {b.id:#x}" in caplog.text and f"{stream:#x}" in caplog.text
    a.stream_synchronize(stream)  # the owner still has it


# -- memory -----------------------------------------------------------------------------------


def test_copy_round_trip_and_memset(manager: SessionManager) -> None:
    s = ready(manager)
    ptr = s.mem_alloc(1000)
    s.memcpy_htod(ptr, memoryview(bytes(range(250)) * 4))
    assert bytes(s.memcpy_dtoh(ptr + 10, 5)) == bytes(range(10, 15))
    s.memset(ptr, 0xABCD, 2, 4)
    assert bytes(s.memcpy_dtoh(ptr, 8)) == b"\xcd\xab" * 4
    dst = s.mem_alloc(16)
    s.memcpy_dtod(dst, ptr, 16)
    assert bytes(s.memcpy_dtoh(dst, 16)) == bytes(s.memcpy_dtoh(ptr, 16))


def test_other_sessions_pointer_is_refused_and_data_kept(
    manager: SessionManager, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = ready(manager, "a"), ready(manager, "b")
    ptr = a.mem_alloc(256)
    a.memcpy_htod(ptr, memoryview(b"secret" * 10))
    b.mem_alloc(256)  # b has memory of its own, just not this
    caplog.set_level(logging.WARNING, "cricket_server.session")
    attempts = (
        lambda: b.memcpy_dtoh(ptr, 6),
        lambda: b.memcpy_htod(ptr, memoryview(b"xxxxxx")),
        lambda: b.memset(ptr, 0, 1, 6),
        lambda: b.mem_free(ptr),
    )
    for attempt in attempts:
        with pytest.raises(CudaError, match=f"{ptr:#x} is not") as e:
            attempt()
        assert code(e) == CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CudaError) as e:
        b.mem_get_address_range(ptr)
    assert code(e) == CUDA_ERROR_NOT_FOUND  # as local CUDA for an address outside every allocation
    assert f"session {b.id:#x}" in caplog.text
    assert bytes(a.memcpy_dtoh(ptr, 6)) == b"secret"


def test_copies_must_stay_inside_one_allocation(manager: SessionManager) -> None:
    s = ready(manager)
    p = s.mem_alloc(256)
    q = s.mem_alloc(256)
    for attempt in (
        lambda: s.memcpy_dtoh(p + 200, 100),
        lambda: s.memcpy_htod(p, memoryview(bytes(257))),
        lambda: s.memcpy_dtod(q, p, 300),
        lambda: s.memset(p + 4, 0, 4, 64),
    ):
        with pytest.raises(CudaError, match="runs past the end") as e:
            attempt()
        assert code(e) == CUDA_ERROR_INVALID_VALUE


def test_mem_free_rules(manager: SessionManager) -> None:
    s = ready(manager)
    p = s.mem_alloc(256)
    with pytest.raises(CudaError, match="not its start") as e:
        s.mem_free(p + 16)
    assert code(e) == CUDA_ERROR_INVALID_VALUE
    s.mem_free(p)
    with pytest.raises(CudaError, match="or was freed") as e:
        s.mem_free(p)
    assert code(e) == CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CudaError) as e:
        s.memcpy_dtoh(p, 4)
    assert code(e) == CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CudaError) as e:
        s.mem_alloc(0)
    assert code(e) == CUDA_ERROR_INVALID_VALUE


def test_alloc_pitch(manager: SessionManager) -> None:
    s = ready(manager)
    ptr, pitch = s.mem_alloc_pitch(100, 3, 4)
    assert pitch == 512 and ptr % 512 == 0
    assert s.mem_get_address_range(ptr + 1000) == (ptr, 512 * 3)
    with pytest.raises(CudaError) as e:
        s.mem_alloc_pitch(100, 3, 3)
    assert code(e) == CUDA_ERROR_INVALID_VALUE


def test_async_alloc_and_free_are_ordered_on_the_stream(manager: SessionManager) -> None:
    s = ready(manager)
    stream = s.stream_create(0)
    ptr = s.mem_alloc_async(64, stream)
    s.memcpy_htod(ptr, memoryview(b"x" * 64), stream)
    s.mem_free_async(ptr, stream)
    assert ("event_record", ["stream", 0, 0]) in fake(s).calls  # the stream marks the free
    assert s.find(ptr) is None  # out of reach at once
    assert s.memory.used() == 64  # the memory waits for the stream to get there
    s.synchronize_all()
    assert s.memory.used() == 0


def test_pointer_attributes(manager: SessionManager) -> None:
    s = ready(manager)
    p = s.mem_alloc(300)
    q = s.mem_alloc(300)
    attrs = [
        PA_CONTEXT,
        PA_MEMORY_TYPE,
        PA_HOST_POINTER,
        PA_DEVICE_ORDINAL,
        PA_RANGE_START_ADDR,
        PA_RANGE_SIZE,
        5,
        99,
    ]
    got = {a: (err, v) for a, err, v in s.pointer_attributes(attrs, p + 10)}
    assert got[PA_CONTEXT] == (0, s.ctx_get_current())
    assert got[PA_MEMORY_TYPE] == (0, 2)
    assert got[PA_HOST_POINTER][0] == CUDA_ERROR_INVALID_VALUE
    assert got[PA_DEVICE_ORDINAL] == (0, 0)
    assert got[PA_RANGE_START_ADDR] == (0, p) and got[PA_RANGE_SIZE] == (0, 300)
    assert got[5][0] == CUDA_ERROR_NOT_SUPPORTED and got[99][0] == CUDA_ERROR_INVALID_VALUE
    ids = [s.pointer_attributes([PA_BUFFER_ID], x)[0][2] for x in (p, q, p + 1)]
    assert ids[0] == ids[2] != ids[1]


def test_module_globals_are_addressable(manager: SessionManager) -> None:
    s = ready(manager)
    module = s.module_load(MODULE, {1: 2})
    addr, size = s.module_get_global(module, "counter")
    s.memcpy_htod(addr, memoryview(b"\x07" * size))
    assert bytes(s.memcpy_dtoh(addr, size)) == b"\x07" * size
    with pytest.raises(CudaError):
        s.memcpy_dtoh(addr, size + 1)
    other = ready(manager, "other")
    with pytest.raises(CudaError) as e:
        other.memcpy_dtoh(addr, 4)
    assert code(e) == CUDA_ERROR_INVALID_VALUE
    s.module_unload(module)
    with pytest.raises(CudaError):
        s.memcpy_dtoh(addr, 4)


# -- functions and launches -------------------------------------------------------------------


def test_launch_checks_the_parameter_buffer(manager: SessionManager) -> None:
    s = ready(manager)
    module = s.module_load(MODULE, {})
    func = s.module_get_function(module, "add")
    assert s.module_get_function(module, "add") == func
    assert [(p.offset, p.size) for p in s.func_param_info(func)] == [(0, 8), (8, 8), (16, 4)]
    with pytest.raises(CudaError) as e:
        s.launch(func, (1, 1, 1), (32, 1, 1), 0, 0, memoryview(bytes(16)))
    assert code(e) == CUDA_ERROR_INVALID_VALUE
    assert (
        str(e.value.message)
        == f"cuLaunchKernel: function {func:#x} takes 20 bytes of parameters, got 16 (kernel add)"
    )
    s.launch(func, (1, 1, 1), (32, 1, 1), 0, 2, memoryview(bytes(24)))
    assert fake(s).launches[-1][1] == bytes(24)
    param_queries = [c for c in fake(s).calls if c[0] == "func_param_info"]
    assert len(param_queries) == 1  # cached


def test_library_kernels(manager: SessionManager) -> None:
    s = ready(manager)
    lib = s.library_load(MODULE, {}, {})
    kernel = s.library_get_kernel(lib, "noargs")
    func = s.kernel_get_function(kernel)
    assert s.kernel_get_function(kernel) == func
    s.launch(kernel, (1, 1, 1), (1, 1, 1), 0, 0, memoryview(b""))  # a kernel handle works too
    s.library_unload(lib)
    with pytest.raises(CudaError) as e:
        s.launch(func, (1, 1, 1), (1, 1, 1), 0, 0, memoryview(b""))
    assert code(e) == CUDA_ERROR_INVALID_HANDLE


# -- closing ----------------------------------------------------------------------------------


def test_close_frees_everything_once(manager: SessionManager) -> None:
    s = ready(manager)
    s.ctx_create(0, 1)
    for _ in range(5):
        s.mem_alloc(3 << 20)  # chunks of their own
    s.mem_alloc(100)
    s.stream_create(0)
    s.event_create(0)
    s.module_load(MODULE, {})
    s.library_load(MODULE, {}, {})
    backend_session = fake(s)
    assert manager.arena.free_bytes() < ARENA_SIZE
    summary = s.close("test")
    assert summary is not None
    assert summary.counts["allocations"] == 6 and summary.counts["contexts"] == 2
    assert summary.counts["streams"] == 1 and summary.counts["modules"] == 1
    assert manager.arena.free_bytes() == ARENA_SIZE
    assert backend_session.live == set()
    assert all(not b.mapped for b in backend_session.backings.values())
    assert backend_session.closed == 1
    assert s.close("again") is None
    assert backend_session.closed == 1
    assert s not in manager.sessions() and len(s.handles) == 0


def test_close_goes_on_when_the_backend_fails(manager: SessionManager) -> None:
    s = ready(manager)
    s.mem_alloc(64)
    s.stream_create(0)

    def broken(stream: object) -> None:
        raise RuntimeError("driver fell over")

    fake(s).stream_destroy = broken  # type: ignore[method-assign]
    summary = s.close("test")
    assert summary is not None and summary.errors == 1
    assert manager.arena.free_bytes() == ARENA_SIZE
