"""Generated modules carry their struct coders as ordinary code and build every codec at
import: nothing is compiled at run time (no ``exec``), no generated class is patched on
first use, and no codec is built lazily (while threads may use it)."""

from __future__ import annotations

import builtins
import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from test_compiler_generated import CORPUS, load_generated

from cricket_xdr import xdr


@pytest.fixture
def gen(tmp_path: Path) -> Iterator[ModuleType]:
    name = "all_constructs_rpc_no_runtime_code"
    yield load_generated(CORPUS / "all_constructs.x", tmp_path, name)
    sys.modules.pop(name, None)


def _codecs(module: ModuleType) -> dict[str, xdr.Codec]:
    return {n: c for n, c in vars(module).items() if isinstance(c, xdr.Codec)}


def _scalars(gen: ModuleType) -> Any:
    return gen.scalars(-1, 2, 3, -4, 5, 0.5, 1.25, True, gen.color.BLUE, 6, 7, 8, 9, 10, 11)


def test_every_codec_is_built_at_import(gen: ModuleType) -> None:
    unbuilt = [n for n, c in _codecs(gen).items() if c._state != 2]
    assert not unbuilt, f"built on first use instead: {unbuilt}"


def test_coding_compiles_no_code(gen: ModuleType) -> None:
    compiled: list[str] = []
    real_exec, real_compile = builtins.exec, builtins.compile

    def spy_exec(*args: Any, **kwargs: Any) -> Any:
        compiled.append("exec")
        return real_exec(*args, **kwargs)

    def spy_compile(*args: Any, **kwargs: Any) -> Any:
        compiled.append("compile")
        return real_compile(*args, **kwargs)

    builtins.exec, builtins.compile = spy_exec, spy_compile  # type: ignore[assignment]
    try:
        value = _scalars(gen)
        assert gen.scalars.decode(value.encode()) == value
        chain = gen.node(1, "a", gen.node(2, "b", None))
        assert gen.xdr_node.decode(gen.xdr_node.encode(chain)) == chain
        arrays = gen.arrays(
            [1, 2, 3], [4], [], [gen.color.RED], [True, False], b"12345", b"xy", "s", ["n"],
            [value], b"h" * 20, chain, gen.tree(1, None, gen.tree(2, None, None)), [0.5, 1.5],
        )
        assert gen.xdr_arrays.decode(gen.xdr_arrays.encode(arrays)) == arrays
    finally:
        builtins.exec, builtins.compile = real_exec, real_compile
    assert not compiled, f"code compiled at run time: {compiled}"


def test_generated_classes_are_not_patched_on_first_use(gen: ModuleType) -> None:
    before = dict(vars(gen.scalars))
    _scalars(gen).encode()
    gen.xdr_arrays.ready()
    assert dict(vars(gen.scalars)) == before


def _by_hand(gen: ModuleType, codec: xdr.Struct) -> xdr.Struct:
    """The same struct defined by hand (the runtime's own coders, no generated functions)."""
    return xdr.Struct(codec.name).define(codec.cls, codec.fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\0" * 4, "data ends early at offset 0"),
        (b"\0" * 40 + b"\0\0\0\2" + b"\0" * 100, "a bool is 2, neither 0 nor 1"),
        (b"\0" * 44 + b"\0\0\0\5" + b"\0" * 100, "5 is not a declared enum value"),
    ],
    ids=["short", "bool", "enum"],
)
def test_generated_and_hand_made_coders_agree_on_errors(
    gen: ModuleType, data: bytes, message: str
) -> None:
    messages = []
    for codec in (gen.xdr_scalars, _by_hand(gen, gen.xdr_scalars)):
        with pytest.raises(xdr.XdrDecodeError) as info:
            codec.unpack(xdr.Decoder(data))
        messages.append(str(info.value))
    assert messages == [f"struct scalars: {message}"] * 2


def test_generated_and_hand_made_coders_agree_on_values(gen: ModuleType) -> None:
    value = _scalars(gen)
    hand = _by_hand(gen, gen.xdr_scalars)
    assert hand.encode(value) == gen.xdr_scalars.encode(value) == value.encode()
    assert hand.decode(value.encode()) == value
    bad = dataclasses.replace(value, c=3)
    with pytest.raises(xdr.XdrEncodeError) as mine:
        gen.xdr_scalars.encode(bad)
    with pytest.raises(xdr.XdrEncodeError) as theirs:
        hand.encode(bad)
    assert str(mine.value) == str(theirs.value)
    assert str(mine.value) == "struct scalars: field c: enum color: 3 is not a declared value"
