"""Our generated codecs against libtirpc's xdrmem with rpcgen's xdr_* routines (c/codec.c).

Encoding: the same value gives the same bytes. Decoding: we read libtirpc's bytes back to
the case's value, and libtirpc reads ours back to its value.
"""

from __future__ import annotations

import subprocess
from types import ModuleType
from typing import Any

import pytest
from alltypes_cases import CASE_NAMES, Case, differences
from cbuild import CPeers

pytestmark = pytest.mark.interop

# ECHO_HYPER's argument is a bare `hyper`: no named type, so no xdr_ codec of its own.
CODEC_CASES = [name for name in CASE_NAMES if not name.startswith("hyper_")]


@pytest.fixture(scope="module")
def libtirpc_bytes(c_peers: CPeers) -> dict[str, bytes]:
    """Case name -> libtirpc's encoding of the case's C value."""
    out = subprocess.run(
        [str(c_peers.codec), "encode"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    pairs = (line.split(" ") for line in out.splitlines())
    return {name: bytes.fromhex(hex_) for name, hex_ in pairs}


def codec_of(alltypes: ModuleType, case: Case) -> Any:
    return getattr(alltypes, f"xdr_{case.type}")


def first_difference(ours: bytes, theirs: bytes) -> str:
    at = next(
        (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
        min(len(ours), len(theirs)),
    )
    return (
        f"{len(ours)} bytes vs libtirpc's {len(theirs)}; first difference at offset {at}: "
        f"ours {ours[at : at + 16].hex()} libtirpc {theirs[at : at + 16].hex()}"
    )


@pytest.mark.parametrize("name", CODEC_CASES)
def test_encoding_equals_libtirpc(
    name: str, alltypes: ModuleType, cases: dict[str, Case], libtirpc_bytes: dict[str, bytes]
) -> None:
    case = cases[name]
    ours = codec_of(alltypes, case).encode(case.value)
    theirs = libtirpc_bytes[name]
    assert ours == theirs, first_difference(ours, theirs)


@pytest.mark.parametrize("name", CODEC_CASES)
def test_decoding_libtirpc_bytes(
    name: str, alltypes: ModuleType, cases: dict[str, Case], libtirpc_bytes: dict[str, bytes]
) -> None:
    case = cases[name]
    decoded = codec_of(alltypes, case).decode(libtirpc_bytes[name])
    assert differences(decoded, case.value) == []


@pytest.fixture(scope="module")
def libtirpc_verdicts(
    c_peers: CPeers, alltypes: ModuleType, cases: dict[str, Case]
) -> dict[str, str]:
    """Case name -> what libtirpc said of our encoding ("ok" or "MISMATCH: why")."""
    lines = []
    for name in CODEC_CASES:
        case = cases[name]
        lines.append(f"{name} {codec_of(alltypes, case).encode(case.value).hex()}\n")
    proc = subprocess.run(
        [str(c_peers.codec), "check"],
        input="".join(lines),
        capture_output=True,
        text=True,
        timeout=60,
    )
    verdicts = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert set(verdicts) == set(CODEC_CASES), proc.stdout + proc.stderr
    return verdicts


@pytest.mark.parametrize("name", CODEC_CASES)
def test_libtirpc_decodes_our_encoding(name: str, libtirpc_verdicts: dict[str, str]) -> None:
    assert libtirpc_verdicts[name] == "ok"


def test_every_named_type_has_a_case(alltypes: ModuleType, cases: dict[str, Case]) -> None:
    covered = {case.type for case in cases.values()}
    wrapped = {"color", "name", "blob", "smallbytes", "anybytes", "triple", "node"}  # inside others
    named = {name[len("xdr_") :] for name in alltypes.__all__ if name.startswith("xdr_")}
    assert named - covered - wrapped == set()


@pytest.fixture(scope="module")
def rpcgen_constants(c_peers: CPeers) -> dict[str, int]:
    """Every constant of alltypes.x as rpcgen's header and gcc see it."""
    out = subprocess.run(
        [str(c_peers.codec), "consts"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return {name: int(value) for name, value in (line.split() for line in out.splitlines())}


def test_constants_equal_rpcgen_macros(
    alltypes: ModuleType, rpcgen_constants: dict[str, int]
) -> None:
    """Decimal, hex, octal and negative consts, enum values, program/version/procedure numbers."""
    ours = {name: int(getattr(alltypes, name)) for name in rpcgen_constants}
    assert ours == rpcgen_constants
    enum_values = {m.name: int(m) for m in alltypes.color}
    assert enum_values == {
        n: rpcgen_constants[n] for n in ("RED", "GREEN", "BLUE", "BLACK", "WHITE")
    }
