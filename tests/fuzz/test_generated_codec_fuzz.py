"""Fuzzing of the generated XDR codecs: random and mutated encodings decode or raise only
XdrError; every corpus file's types round-trip and survive mutation. Property-based and
slow (several seconds), so apart from the unit tests, whose helpers it uses."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from unit.test_compiler_generated import (
    CORPUS,
    load_generated,
    mutate_and_decode,
    named_codecs,
    round_trip,
)

from cricket_xdr import xdr

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The corpus file of every construct, compiled and imported."""
    name = "all_constructs_rpc_under_fuzzing"
    yield load_generated(CORPUS / "all_constructs.x", tmp_path_factory.mktemp("gen"), name)
    sys.modules.pop(name, None)


@pytest.mark.parametrize("seed", range(3))
def test_fuzz_random_bytes_raise_only_xdr_errors(gen: ModuleType, seed: int) -> None:
    codecs = list(named_codecs(gen).values())

    @settings(max_examples=150, deadline=None, database=None)
    @given(st.binary(max_size=200), st.sampled_from(codecs))
    def fuzz(data: bytes, codec: xdr.Codec) -> None:
        try:
            codec.decode(data)
        except xdr.XdrError:
            pass

    fuzz()


def test_fuzz_mutated_encodings_raise_only_xdr_errors(gen: ModuleType) -> None:
    for codec in named_codecs(gen).values():
        mutate_and_decode(codec)()


@pytest.mark.parametrize("source", sorted(CORPUS.glob("*.x")), ids=lambda p: p.stem)
def test_corpus_file_round_trips_and_survives_fuzzing(source: Path, tmp_path: Path) -> None:
    name = f"corpus_{source.stem}_under_test"
    try:
        module = load_generated(source, tmp_path, name)
        codecs = named_codecs(module)
        for codec_name, codec in codecs.items():
            try:
                round_trip(codec)()
                mutate_and_decode(codec)()
            except Exception as e:
                raise AssertionError(f"{source.name}: {codec_name}: {e}") from e
    finally:
        sys.modules.pop(name, None)


