"""Call plans (cricket_xdr.compiler.emit_plans) code exactly what the codecs code, and hand
what they do not take to the codecs: same bytes, same values, same errors."""

from __future__ import annotations

import itertools
import struct
from typing import Any

import pytest

from cricket_xdr import xdr
from cricket_xdr.compiler.driver import compile_source
from rpc_spec import cricket_rpc as proto

PROCEDURES = proto.CRICKET_V1_Server.PROCEDURES
ARG_PLANS = [p for p in PROCEDURES.values() if p.plan.encode_args is not None]
UNION_PLANS = [p for p in PROCEDURES.values() if p.plan.encode_result is not None]
CANDIDATES = [0, 1, -1, 7, 2**31 - 1, -(2**31), 2**32 - 1, 2**63 - 1, -(2**63), 2**64 - 1, 1.5]


def _accepted(codec: Any) -> list[Any]:
    """The candidate values `codec` encodes."""
    out = []
    for value in CANDIDATES:
        try:
            codec.encode(value)
        except xdr.XdrEncodeError:
            continue
        out.append(value)
    return out


def _joined(pieces: Any) -> bytes:
    return pieces if isinstance(pieces, bytes) else b"".join(bytes(p) for p in pieces)


def test_the_measured_calls_have_plans() -> None:
    for number in (proto.CU_CTX_GET_DEVICE, proto.CU_MEM_GET_INFO, proto.CU_DEVICE_GET_ATTRIBUTE):
        assert PROCEDURES[number].plan.decode_reply is not None
    assert PROCEDURES[proto.CU_DEVICE_GET_ATTRIBUTE].plan.decode_args is not None
    assert PROCEDURES[proto.CU_MEM_GET_INFO].plan.encode_result is not None
    # arguments that are not all fixed-size scalars keep their codecs
    assert PROCEDURES[proto.CU_MODULE_GET_FUNCTION].plan.encode_args is None
    assert len(ARG_PLANS) > 20 and len(UNION_PLANS) > 20


@pytest.mark.parametrize("proc", ARG_PLANS, ids=[p.name for p in ARG_PLANS])
def test_arguments_code_as_the_codecs_do(proc: Any) -> None:
    choices = [_accepted(c) for c in proc.arg_codecs]
    for values in itertools.islice(itertools.product(*choices), 200):
        body = b"".join(c.encode(v) for c, v in zip(proc.arg_codecs, values, strict=True))
        assert _joined(proc.plan.encode_args(*values)) == body
        decoded = proc.plan.decode_args(body)
        assert list(decoded) == [c.decode(body_part) for c, body_part in _split(proc, body)]
        for bad in (body[:-1], body + b"\0\0\0\0", b""):
            with pytest.raises(xdr.XdrDecodeError):
                proc.plan.decode_args(bad)


def _split(proc: Any, body: bytes) -> list[tuple[Any, bytes]]:
    out, pos = [], 0
    for codec in proc.arg_codecs:
        size = codec.min_size()
        out.append((codec, body[pos : pos + size]))
        pos += size
    return out


@pytest.mark.parametrize("proc", ARG_PLANS, ids=[p.name for p in ARG_PLANS])
def test_arguments_the_struct_refuses_fail_as_in_the_codecs(proc: Any) -> None:
    for i, codec in enumerate(proc.arg_codecs):
        values = [_accepted(c)[0] for c in proc.arg_codecs]
        for bad in (2**64, "7", None):
            values[i] = bad
            with pytest.raises(xdr.XdrEncodeError) as codec_error:
                codec.encode(bad)
            with pytest.raises(xdr.XdrEncodeError) as plan_error:
                proc.plan.encode_args(*values)
            assert str(plan_error.value) == str(codec_error.value)


def _fields(value: Any, count: int) -> tuple[Any, ...]:
    """(err, *fields) of a union result as the client's plan gives it (`count` fields)."""
    arm = value.value
    if arm is None:
        return (value.err, *[None] * count)
    if isinstance(arm, int | float):
        return (value.err, arm)
    return (value.err, *(getattr(arm, f) for f in arm.__dataclass_fields__))


@pytest.mark.parametrize("proc", UNION_PLANS, ids=[p.name for p in UNION_PLANS])
def test_results_code_as_the_codecs_do(proc: Any) -> None:
    codec, plan = proc.result_codec, proc.plan
    success = _success_body(codec)
    count = len(plan.decode_reply(success)) - 1
    for body in (success, struct.pack(">i", 700), struct.pack(">i", -1)):
        value = codec.decode(body)
        assert _joined(plan.encode_result(value)) == body
        assert plan.decode_reply(body) == _fields(value, count)
    # bodies the codec refuses: success without its value, a failure with one, short, long
    for bad in (b"\0\0\0\0", struct.pack(">i", 700) + success[4:], b"\0\0", success + b"\0" * 4):
        with pytest.raises(xdr.XdrDecodeError):
            codec.decode(bad)
        with pytest.raises(xdr.XdrDecodeError):
            plan.decode_reply(bad)


def _success_body(codec: Any) -> bytes:
    """err 0 and a value of increasing bytes (valid for every scalar, floats included)."""
    for width in range(8, 132, 4):
        body = b"\0\0\0\0" + bytes(range(1, width - 3))
        try:
            codec.decode(body)
        except xdr.XdrDecodeError:
            continue
        return body
    raise AssertionError(f"{codec!r}: no success body")


def _outcome(fn: Any, value: Any) -> Any:
    try:
        return _joined(fn(value))
    except xdr.XdrEncodeError as e:
        return f"XdrEncodeError: {e}"


@pytest.mark.parametrize("proc", UNION_PLANS, ids=[p.name for p in UNION_PLANS])
def test_odd_results_encode_as_in_the_codec(proc: Any) -> None:
    cls = type(proc.result_codec.decode(struct.pack(">i", 1)))
    for odd in (cls(0, None), cls(2**40, None), cls(1, 5), cls(0, "x"), 7):
        assert _outcome(proc.plan.encode_result, odd) == _outcome(proc.result_codec.encode, odd)
    assert _outcome(proc.plan.encode_result, cls(0, None)).startswith("XdrEncodeError")


SPEC = """
struct pair { int a; unsigned hyper b; };
union pair_result switch (int err) { case 0: pair value; default: void; };
union name_result switch (int err) { case 0: string name<>; default: void; };
program P { version V {
    pair_result FIXED(int, hyper, double) = 1;
    name_result NAMED(string) = 2;
    int STATUS(void) = 3;
} = 1; } = 0x20000001;
"""


def test_the_compiler_writes_plans_as_ordinary_code() -> None:
    source = compile_source(SPEC, "plans.x")
    assert "exec(" not in source and "DO NOT EDIT" in source.splitlines()[0]
    namespace: dict[str, Any] = {}
    exec(compile(source, "plans_rpc.py", "exec"), namespace)  # the test imports it
    procs = namespace["V_Server"].PROCEDURES
    fixed, named, status = procs[1].plan, procs[2].plan, procs[3].plan
    assert fixed.decode_args(struct.pack(">iqd", -3, 2**40, 0.5)) == (-3, 2**40, 0.5)
    assert fixed.encode_args(-3, 2**40, 0.5) == struct.pack(">iqd", -3, 2**40, 0.5)
    assert fixed.decode_reply(struct.pack(">iiQ", 0, 4, 2**64 - 1)) == (0, 4, 2**64 - 1)
    assert fixed.decode_reply(struct.pack(">i", 2)) == (2, None, None)
    pair = namespace["pair_result"](0, namespace["pair"](4, 5))
    assert fixed.encode_result(pair) == [struct.pack(">iiQ", 0, 4, 5)]
    assert named.encode_args is None and named.decode_reply is None  # strings: the codecs
    assert status.decode_reply(struct.pack(">i", 9)) == (9,)
