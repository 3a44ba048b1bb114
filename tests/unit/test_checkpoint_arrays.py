"""What a restore refuses in a manifest's arrays and texture/surface objects (no device)."""

from __future__ import annotations

from checkpoint.validate import manifest_problems
from rpc_spec import checkpoint_rpc as ck
from rpc_spec import cricket_rpc as proto
from tests.unit.checkpoint_refs import raw_ref

CTX = 0x01 << 56 | 1
ARRAY = 0x40 << 56 | 2


def _blob(size: int) -> ck.blob_ref:
    return raw_ref(f"s1/array-{size}", size)


def _array(handle: int = ARRAY, size: int = 8 * 4 * 4, ctx: int = CTX) -> ck.array_image:
    return ck.array_image(handle=handle, ctx=ctx, width=8, height=4, depth=0, format=0x20,
                          channels=1, flags=0, contents=_blob(size))  # fmt: skip


def _object(array: int = ARRAY, value: int = 1) -> ck.tex_object_image:
    res = proto.resource_desc(res_type=0, array=array, ptr=0, format=0, channels=0, size=0,
                              width=0, height=0, pitch=0, flags=0)  # fmt: skip
    return ck.tex_object_image(value=value, ctx=CTX, surface=True,
                               resource=proto.xdr_resource_desc.encode(res), texture=b"", view=b"")  # fmt: skip


def _body(arrays: list[ck.array_image], objects: list[ck.tex_object_image]) -> ck.manifest_body:
    session = ck.session_image(
        session_id=1, token_salt=bytes(16), token_digest=bytes(32), resume_hint=bytes(32),
        peer="p", client_name="c", initialized=True, calls=0, context_stack=[CTX],
        contexts=[ck.context_image(handle=CTX, dev=0, flags=0, primary=True, retain_count=1)],
        devices=[], modules=[], libraries=[], streams=[], events=[], allocations=[],
        arrays=arrays, tex_objects=objects, settings=[], graphs=[], graph_execs=[],
        vmm=ck.vmm_image(reservations=[], physicals=[], mappings=[]), pools=[], mipmaps=[],
    )  # fmt: skip
    return ck.manifest_body(created_by="t", created_unix_ns=0, backend="sim", driver_version=0,
                            va_base=1 << 40, va_size=1 << 40, sessions=[session])  # fmt: skip


def test_a_sound_array_and_object_pass() -> None:
    assert manifest_problems(_body([_array()], [_object()])) == []


def test_an_array_blob_of_another_size_is_refused() -> None:
    (problem,) = manifest_problems(_body([_array(size=100)], []))
    assert "array 0x4000000000000002 holds 128 bytes" in problem and "100" in problem


def test_a_handle_of_another_kind_or_a_missing_context_is_refused() -> None:
    problems = manifest_problems(_body([_array(handle=0x07 << 56 | 2, ctx=CTX + 5)], []))
    assert any("is not a array handle" in p for p in problems)
    assert any("names context" in p for p in problems)


def test_an_object_on_a_missing_array_or_undecodable_is_refused() -> None:
    (problem,) = manifest_problems(_body([], [_object()]))
    assert "names array 0x4000000000000002, which is not in it" in problem
    bad = _object()
    bad.resource = b"\0\0"
    (problem,) = manifest_problems(_body([_array()], [bad]))
    assert "does not decode" in problem
