"""Modules generated from the corpus: round trips, decoder fuzzing, deep lists, RPC stubs."""

from __future__ import annotations

import importlib.util
import struct
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import xdrlib3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cricket_xdr import xdr
from cricket_xdr.compiler.driver import compile_file

CORPUS = Path(__file__).parent / "compiler_cases"


def load_generated(source: Path, out_dir: Path, name: str) -> ModuleType:
    """Compile ``source`` into ``out_dir/name.py`` and import it."""
    path = out_dir / f"{name}.py"
    path.write_text(compile_file(str(source)))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    name = "all_constructs_rpc_under_test"
    yield load_generated(CORPUS / "all_constructs.x", tmp_path_factory.mktemp("gen"), name)
    sys.modules.pop(name, None)


SCALARS: dict[int, st.SearchStrategy[Any]] = {
    id(xdr.xdr_int): st.integers(-(2**31), 2**31 - 1),
    id(xdr.xdr_u_int): st.integers(0, 2**32 - 1),
    id(xdr.xdr_hyper): st.integers(-(2**63), 2**63 - 1),
    id(xdr.xdr_u_hyper): st.integers(0, 2**64 - 1),
    id(xdr.xdr_float): st.floats(width=32, allow_nan=False),
    id(xdr.xdr_double): st.floats(allow_nan=False),
    id(xdr.xdr_bool): st.booleans(),
    id(xdr.xdr_void): st.none(),
}


def values(codec: xdr.Codec, depth: int = 2) -> st.SearchStrategy[Any]:
    """Values of any codec of the runtime, read from the codec objects themselves."""
    if id(codec) in SCALARS:
        return SCALARS[id(codec)]
    if isinstance(codec, xdr.Enum):
        return st.sampled_from(list(codec.cls))
    if isinstance(codec, xdr.FixedOpaque):
        return st.binary(min_size=codec.size, max_size=codec.size)
    if isinstance(codec, xdr.VarOpaque):
        return st.binary(max_size=min(codec.bound, 12))
    if isinstance(codec, xdr.String):
        bound = codec.bound
        return st.text(max_size=min(bound, 8)).filter(lambda s: len(s.encode()) <= bound)
    if isinstance(codec, xdr.FixedArray):
        return st.lists(values(codec.elem, depth), min_size=codec.size, max_size=codec.size)
    if isinstance(codec, xdr.VarArray):
        return st.lists(values(codec.elem, depth - 1), max_size=min(codec.bound, 3 if depth > 0 else 0))
    if isinstance(codec, xdr.Optional):
        return st.none() if depth <= 0 else st.none() | values(codec.elem, depth - 1)
    if isinstance(codec, xdr.Struct):
        assert codec.cls is not None
        return st.builds(codec.cls, *[values(c, depth) for _, c in codec.fields])
    if isinstance(codec, xdr.Union):
        cls = codec.cls
        arms = [
            st.tuples(st.just(case), values(arm, depth)).map(lambda t: cls(*t))
            for case, arm in sorted(codec.arms.items())
        ]
        if codec.default is not None:
            if isinstance(codec.disc, xdr.Enum):
                others = [m for m in codec.disc.cls if m not in codec.arms]
                discs = st.sampled_from(others) if others else st.nothing()
            else:
                discs = values(codec.disc).filter(lambda d: d not in codec.arms)
            arms.append(st.tuples(discs, values(codec.default, depth)).map(lambda t: cls(*t)))
        return st.one_of(arms)
    raise AssertionError(f"no strategy for {codec!r}")


def named_codecs(module: ModuleType) -> dict[str, xdr.Codec]:
    return {n: getattr(module, n) for n in module.__all__ if n.startswith("xdr_")}


def test_every_named_type_round_trips(gen: ModuleType) -> None:
    codecs = named_codecs(gen)
    assert {"xdr_scalars", "xdr_arrays", "xdr_result", "xdr_by_color", "xdr_nodeptr"} <= set(codecs)
    for name, codec in codecs.items():
        try:
            round_trip(codec)()
        except Exception as e:
            raise AssertionError(f"{name}: {e}") from e


def round_trip(codec: xdr.Codec) -> Any:
    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(values(codec))
    def check(value: Any) -> None:
        data = codec.encode(value)
        assert len(data) % 4 == 0
        assert codec.decode(data) == value

    return check


def test_struct_bytes_match_xdrlib3(gen: ModuleType) -> None:
    v = gen.scalars(-1, 2**32 - 1, 7, -(2**40), 2**63, 0.5, 1.25, True, gen.BLUE, -2, 3, -4, 5, -6, 7)
    p = xdrlib3.Packer()
    p.pack_int(-1), p.pack_uint(2**32 - 1), p.pack_uint(7), p.pack_hyper(-(2**40))
    p.pack_uhyper(2**63), p.pack_float(0.5), p.pack_double(1.25), p.pack_bool(True)
    p.pack_int(31), p.pack_int(-2), p.pack_uint(3), p.pack_int(-4), p.pack_uint(5)
    p.pack_int(-6), p.pack_uint(7)
    assert v.encode() == p.get_buffer()
    assert gen.scalars.decode(p.get_buffer()) == v


def test_union_arms_and_properties(gen: ModuleType) -> None:
    r = gen.result(-5, "why not")
    assert gen.xdr_result.encode(r) == struct.pack(">iI", -5, 7) + b"why not\0"
    assert r.why == "why not"
    with pytest.raises(AttributeError, match="arm 'ok' is not selected by status=-5"):
        _ = r.ok
    assert gen.result(99, 4).code == 4  # default arm
    assert gen.result.decode(struct.pack(">i", 2)) == gen.result(2, None)  # void arm
    assert gen.by_bool.decode(struct.pack(">Iq", 1, -3)).val == -3
    with pytest.raises(xdr.XdrDecodeError, match="no arm for c=<color.BLUE: 31>|not a declared"):
        gen.by_color.decode(struct.pack(">i", 7))
    with pytest.raises(xdr.XdrEncodeError, match="no arm"):
        gen.by_color(5).encode()


def test_enum_is_strict(gen: ModuleType) -> None:
    assert gen.xdr_color.decode(b"\0\0\0\x1f") is gen.color.BLUE
    with pytest.raises(xdr.XdrDecodeError, match="enum color: 2 is not a declared value"):
        gen.xdr_color.decode(b"\0\0\0\2")
    with pytest.raises(xdr.XdrEncodeError, match="enum color"):
        gen.xdr_color.encode(2)


def test_keyword_fields_get_a_trailing_underscore(gen: ModuleType) -> None:
    k = gen.keywords(from_=1, class_=2, encode_=3)
    assert gen.keywords.decode(k.encode()) == k


def test_long_list_does_not_recurse(gen: ModuleType) -> None:
    head = None
    for i in range(10_000):
        head = gen.node(i, f"n{i}", head)
    data = gen.xdr_nodeptr.encode(head)
    back = gen.xdr_nodeptr.decode(data)
    count = 0
    while back is not None:
        assert back.value == 9_999 - count
        back, count = back.next, count + 1
    assert count == 10_000
    holder = gen.xdr_arrays.decode(
        gen.arrays([1, 2, 3], [], [], [], [True, False], b"12345", b"", "", [], [],
                   bytes(20), head, None, [0.0, 1.0]).encode()
    )
    assert holder.list.value == 9_999


def test_deep_tree_is_a_decode_error_not_a_crash(gen: ModuleType) -> None:
    level = struct.pack(">iI", 1, 1)  # key, left present
    data = level * 100_000 + struct.pack(">iII", 1, 0, 0) + b"\0\0\0\0" * 100_000
    with pytest.raises(xdr.XdrDecodeError, match="nested too deeply"):
        gen.xdr_tree.decode(data)


def mutate_and_decode(codec: xdr.Codec) -> Any:
    @settings(max_examples=80, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(values(codec), st.data())
    def fuzz(value: Any, data: st.DataObject) -> None:
        raw = bytearray(codec.encode(value))
        for _ in range(data.draw(st.integers(1, 4))):
            op = data.draw(st.sampled_from(["flip", "cut", "insert", "word"]))
            at = data.draw(st.integers(0, max(len(raw) - 1, 0)))
            if op == "flip" and raw:
                raw[at] ^= data.draw(st.integers(1, 255))
            elif op == "cut":
                del raw[at:]
            elif op == "insert":
                raw[at:at] = data.draw(st.binary(min_size=1, max_size=8))
            elif op == "word" and len(raw) >= at + 4:
                raw[at : at + 4] = data.draw(st.sampled_from(
                    [b"\x80\0\0\0", b"\xff\xff\xff\xff", b"\0\0\0\2", b"\x7f\xff\xff\xff"]))
        try:
            codec.decode(bytes(raw))
        except xdr.XdrError:
            pass

    return fuzz


def test_length_of_2_pow_31_is_refused_without_allocating(gen: ModuleType) -> None:
    value = gen.arrays([1, 2, 3], [], [], [], [True, False], b"12345", b"", "", [], [],
                       bytes(20), None, None, [0.0, 1.0])
    good = value.encode()
    unbounded_at = 12 + 4  # fixed[3], then bounded<4> count, then unbounded<> count
    bad = good[:unbounded_at] + struct.pack(">I", 2**31) + good[unbounded_at + 4 :]
    tracemalloc.start()
    try:
        with pytest.raises(xdr.XdrDecodeError, match="2147483648 items"):
            gen.xdr_arrays.decode(bad)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


class FakeRpc:
    """Records calls and answers with canned reply bodies."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.calls: list[tuple[Any, ...]] = []

    def call(self, prog: int, vers: int, proc: int, args: Any, *, timeout: float | None = None) -> bytes:
        self.calls.append((prog, vers, proc, b"".join(bytes(a) for a in args) if isinstance(args, list) else bytes(args), timeout))
        return self.reply

    def call_async(self, prog: int, vers: int, proc: int, args: Any) -> Any:
        self.call(prog, vers, proc, args)
        reply = self.reply

        class Done:
            def result(self, timeout: float | None = None) -> bytes:
                return reply

            def done(self) -> bool:
                return True

        return Done()


def test_client_stub_encodes_arguments_and_decodes_the_result(gen: ModuleType) -> None:
    rpc = FakeRpc(gen.by_color(gen.BLUE).encode())
    client = gen.ALLVERS_Client(rpc)
    assert client.PICK(gen.GREEN, True, -1, timeout=2.5) == gen.by_color(gen.BLUE, None)
    assert rpc.calls == [(0x20000101, 1, 5, struct.pack(">iIq", 1, 1, -1), 2.5)]
    assert client.PICK_async(gen.RED, False, 3).result(timeout=1) == gen.by_color(gen.BLUE)
    void = gen.ALLVERS_Client(FakeRpc(b""))
    assert void.NULLPROC() is None
    assert void._rpc.calls[0][:4] == (0x20000101, 1, 0, b"")
    assert gen.ALLVERS2_Client(FakeRpc(b"")).NULLPROC() is None
    assert (gen.ALLPROG, gen.ALLVERS, gen.ALLVERS2, gen.PICK) == (0x20000101, 1, 2, 5)


def test_server_stub_describes_procedures(gen: ModuleType) -> None:
    server = gen.ALLVERS_Server
    assert (server.PROGRAM, server.VERSION) == (0x20000101, 1)
    assert sorted(server.PROCEDURES) == [0, 1, 2, 3, 4, 5, 6]
    pick = server.PROCEDURES[5]
    assert (pick.number, pick.name) == (5, "PICK")
    assert pick.arg_codecs == (gen.xdr_color, xdr.xdr_bool, xdr.xdr_hyper)
    assert pick.result_codec is gen.xdr_by_color
    assert server.PROCEDURES[0].arg_codecs == () and server.PROCEDURES[0].result_codec is xdr.xdr_void
    with pytest.raises(NotImplementedError, match="ALLPROG.ALLVERS.PICK"):
        server().PICK(None, gen.RED, True, 1)

    class Service(gen.ALLVERS_Server):
        def COUNT(self, ctx: Any) -> int:
            return 3

    assert Service().COUNT(None) == 3


def test_typedef_aliases_reach_builtins_past_names_of_the_spec(tmp_path: Path) -> None:
    name = "corpus_builtin_names_aliases"
    try:
        module = load_generated(CORPUS / "builtin_names.x", tmp_path, name)
        assert (module.ints, module.blob, module.text) == (list, bytes, str)
        assert module.list_alias is module.list and module.bytes == 3
    finally:
        sys.modules.pop(name, None)
