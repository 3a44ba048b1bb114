"""What a restore refuses in a manifest's mipmapped arrays (no device): level blobs of another
size, level handles of another kind, objects naming a mipmapped array not in it."""

from __future__ import annotations

from test_checkpoint_arrays import CTX, _array, _body

from checkpoint.validate import manifest_problems
from rpc_spec import checkpoint_rpc as ck
from rpc_spec import cricket_rpc as proto

MIPMAP = 0x41 << 56 | 3
LEVEL0, LEVEL1 = 0x40 << 56 | 4, 0x40 << 56 | 5


def _mipmap(level_size: int = 4 * 2 * 4, level_kind: int = 0x40) -> ck.mipmap_image:
    levels = [
        _array(LEVEL0),
        _array(level_kind << 56 | 5, size=level_size),
    ]
    levels[1].width, levels[1].height = 4, 2
    return ck.mipmap_image(handle=MIPMAP, ctx=CTX, width=8, height=4, depth=0, format=0x20,
                           channels=1, flags=0, levels=levels)  # fmt: skip


def _texture(mipmap: int) -> ck.tex_object_image:
    res = proto.resource_desc(res_type=1, array=mipmap, ptr=0, format=0, channels=0, size=0,
                              width=0, height=0, pitch=0, flags=0)  # fmt: skip
    tex = proto.texture_desc(address_mode=[0, 0, 0], filter_mode=0, flags=0, max_anisotropy=0,
                             mipmap_filter_mode=0, mipmap_level_bias=0.0,
                             min_mipmap_level_clamp=0.0, max_mipmap_level_clamp=1.0,
                             border_color=[0.0] * 4)  # fmt: skip
    return ck.tex_object_image(value=7, ctx=CTX, surface=False,
                               resource=proto.xdr_resource_desc.encode(res),
                               texture=proto.xdr_texture_desc.encode(tex), view=b"")  # fmt: skip


def _with(mipmap: ck.mipmap_image, objects: list[ck.tex_object_image]) -> ck.manifest_body:
    body = _body([], objects)
    body.sessions[0].mipmaps = [mipmap]
    return body


def test_a_sound_mipmap_and_a_texture_over_it_pass() -> None:
    assert manifest_problems(_with(_mipmap(), [_texture(MIPMAP)])) == []


def test_a_level_blob_of_another_size_is_refused() -> None:
    (problem,) = manifest_problems(_with(_mipmap(level_size=100), []))
    assert f"array {LEVEL1:#x} holds 32 bytes" in problem


def test_a_level_handle_of_another_kind_is_refused() -> None:
    problems = manifest_problems(_with(_mipmap(level_kind=0x07), []))
    assert any("level handle" in p and "is not a array handle" in p for p in problems)


def test_a_texture_over_a_missing_mipmap_is_refused() -> None:
    (problem,) = manifest_problems(_with(_mipmap(), [_texture(MIPMAP + 1)]))
    assert f"names mipmapped array {MIPMAP + 1:#x}, which is not in it" in problem
