"""Bytes that break a bound or a rule of alltypes.x: libtirpc and our decoder both refuse them.

Each malformed input is built next to a well-formed twin that both decoders accept, so a
refusal is about the broken rule and not about a mistake in the hand-built bytes.
"""

from __future__ import annotations

import struct
import subprocess
from types import ModuleType

import pytest
from cbuild import CPeers

from cricket_xdr.xdr import XdrDecodeError

pytestmark = pytest.mark.interop


def u32(n: int) -> bytes:
    return struct.pack(">I", n & 0xFFFFFFFF)


def opaque(data: bytes) -> bytes:
    return u32(len(data)) + data + bytes(-len(data) % 4)


def arrays_bytes(
    some: int = 3, names: tuple[bytes, ...] = (b"a",), var_blob: bytes = b"", short: bytes = b""
) -> bytes:
    """An `arrays` value; the arguments say how long its bounded parts are."""
    return b"".join(
        [
            u32(0) * 3,  # fixed_ints
            u32(0),  # big<>
            u32(some) + struct.pack(">d", 1.0) * some,  # some<3>
            u32(len(names)) + b"".join(opaque(n) for n in names),  # names<4>, each name<16>
            b"\x01\x02\x03\x04\x05\x00\x00\x00",  # fixed_blob[5]
            opaque(var_blob),  # var_blob<8>
            opaque(b""),  # any_blob<>
            opaque(short),  # short_text<16>
            opaque(b"long"),  # long_text<>
            u32(0) * 2,  # colors[2]
            u32(0),  # flags<>
        ]
    )


# (id, type, well-formed twin, malformed)
CASES = [
    ("some_over_bound", "arrays", arrays_bytes(some=3), arrays_bytes(some=4)),
    ("names_over_bound", "arrays", arrays_bytes(names=(b"n",) * 4), arrays_bytes(names=(b"n",) * 5)),
    ("name_over_bound", "arrays", arrays_bytes(names=(b"x" * 16,)), arrays_bytes(names=(b"x" * 17,))),
    ("opaque_over_bound", "arrays", arrays_bytes(var_blob=bytes(8)), arrays_bytes(var_blob=bytes(9))),
    ("string_over_bound", "arrays", arrays_bytes(short=b"s" * 16), arrays_bytes(short=b"s" * 17)),
    ("union_string_over_bound", "by_int", u32(-42) + opaque(b"x" * 16), u32(-42) + opaque(b"x" * 17)),
    ("enum_union_without_arm", "by_enum", u32(-1), u32(0o755)),  # BLACK: void; WHITE: no arm
    ("length_past_the_end", "text", opaque(b"abcd"), u32(100) + b"abcd"),
    ("truncated_list", "chain", u32(1) + u32(7) + opaque(b"n0") + u32(0), u32(1) + u32(7)),
    ("truncated_struct", "scalars", bytes(44), bytes(40)),
]  # fmt: skip


def libtirpc_verdicts(codec: str, type_: str, inputs: list[bytes]) -> list[str]:
    proc = subprocess.run(
        [codec, "decode", type_],
        input="".join(f"{data.hex()}\n" for data in inputs),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout.split()


@pytest.mark.parametrize(
    ("type_", "good", "bad"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_libtirpc_and_we_refuse_the_same_bytes(
    type_: str, good: bytes, bad: bytes, c_peers: CPeers, alltypes: ModuleType
) -> None:
    assert libtirpc_verdicts(str(c_peers.codec), type_, [good, bad]) == ["accepted", "rejected"]
    codec = getattr(alltypes, f"xdr_{type_}")
    codec.decode(good)
    with pytest.raises(XdrDecodeError):
        codec.decode(bad)


def scalars_bytes(b: int = 1, c: int = 0) -> bytes:
    """A `scalars` value with bool word b and color word c."""
    return bytes(36) + u32(b) + u32(c)


# (id, well-formed twin, input that libtirpc takes and RFC 4506 forbids)
STRICTER = [
    ("bool_word_2", scalars_bytes(b=1), scalars_bytes(b=2)),  # libtirpc reads any non-zero as TRUE
    ("undeclared_enum_value", scalars_bytes(c=0x10), scalars_bytes(c=2)),  # xdr_enum checks none
]


@pytest.mark.parametrize(("good", "bad"), [c[1:] for c in STRICTER], ids=[c[0] for c in STRICTER])
def test_we_refuse_what_libtirpc_lets_through(
    good: bytes, bad: bytes, c_peers: CPeers, alltypes: ModuleType
) -> None:
    """Known difference: a C peer can send these; our decoder answers GARBAGE_ARGS."""
    assert libtirpc_verdicts(str(c_peers.codec), "scalars", [good, bad]) == ["accepted", "accepted"]
    alltypes.xdr_scalars.decode(good)
    with pytest.raises(XdrDecodeError):
        alltypes.xdr_scalars.decode(bad)
