"""Module images as bytes: what cuModuleLoadData and friends accept, made sendable.

cuda-python takes an image as a buffer (bytes, numpy array, ...) or as an integer host
address. Over the network the image's length must be known, so an address is read according
to what lies there: an ELF cubin (its header gives the extent of its section and program
header tables), a fatbin (its header gives the size) or NUL-terminated PTX text. PTX given as a
buffer without a terminating NUL gets one, as the driver reads it as a C string.

| format | recognised by | length |
| --- | --- | --- |
| ELF cubin | `\\x7fELF` | max(e_shoff + e_shnum*e_shentsize, e_phoff + e_phnum*e_phentsize) |
| fatbin | magic 0xBA55ED50 (little-endian u32) | u16 header size at 6 + u64 body size at 8 |
| PTX | anything else | up to the first NUL |

An address may also hold a `__fatBinC_Wrapper_t` (fatbinary_section.h: magic 0x466243B1,
version, the fatbin's address, ...), as the CUDA runtime registers a program's kernels: the
real driver's module and library loads accept one, and so the fatbin it points to is sent
(version 1; version 2, relocatable device code with prelinked fatbins, is not supported).
"""

from __future__ import annotations

import ctypes
import struct
from typing import Any

from .errors import NotSupportedRemotely

__all__ = ["FATBINC_MAGIC", "ImageError", "image_bytes", "image_length_at", "wrapped_fatbin"]

_ELF_MAGIC = b"\x7fELF"
_FATBIN_MAGIC = 0xBA55ED50
FATBINC_MAGIC = 0x466243B1  # __fatBinC_Wrapper_t.magic
_WRAPPER = struct.Struct("<IIQQ")  # magic, version, data (the fatbin), filename_or_fatbins


class ImageError(ValueError):
    """An image that is empty or cannot be read."""


def _elf_length(header: bytes) -> int:
    if header[4] != 2:  # ELFCLASS64
        raise ImageError("only 64-bit ELF images are supported")
    (phoff, shoff) = struct.unpack_from("<QQ", header, 0x20)
    (phentsize, phnum, shentsize, shnum) = struct.unpack_from("<HHHH", header, 0x36)
    return max(shoff + shnum * shentsize, phoff + phnum * phentsize, 64)


def image_length_at(addr: int) -> int:
    """The length of the image at host address `addr` (ELF, fatbin or NUL-terminated PTX)."""
    head = ctypes.string_at(addr, 4)
    if head == _ELF_MAGIC:
        return _elf_length(ctypes.string_at(addr, 64))
    if struct.unpack("<I", head)[0] == _FATBIN_MAGIC:
        header_size, body_size = struct.unpack("<HQ", ctypes.string_at(addr + 6, 10))
        return header_size + body_size
    return len(ctypes.string_at(addr)) + 1


def wrapped_fatbin(addr: int) -> int:
    """The address of the fatbin the `__fatBinC_Wrapper_t` at host address `addr` holds;
    ImageError for another magic or no fatbin, NotSupportedRemotely for version 2."""
    magic, version, data, _names = _WRAPPER.unpack(ctypes.string_at(addr, _WRAPPER.size))
    if magic != FATBINC_MAGIC:
        raise ImageError(f"not a fat binary wrapper (magic {magic:#x})")
    if version != 1:  # 2: relocatable device code with prelinked fatbins (-rdc)
        raise NotSupportedRemotely(
            f"fat binary wrapper version {version} (relocatable device code) is not supported "
            "remotely"
        )
    if not data:
        raise ImageError("fat binary wrapper without a fat binary")
    return data


def image_bytes(image: Any) -> bytes | memoryview:
    """The image as a bytes-like object for the wire."""
    if image is None or (isinstance(image, int) and image == 0):
        raise ImageError("NULL image")
    if isinstance(image, int):
        if struct.unpack("<I", ctypes.string_at(image, 4))[0] == FATBINC_MAGIC:
            image = wrapped_fatbin(image)
        return ctypes.string_at(image, image_length_at(image))
    if isinstance(image, str):
        image = image.encode()
    view = memoryview(image).cast("B")
    if view.nbytes == 0:
        raise ImageError("empty image")
    head = bytes(view[:4])
    is_binary = head == _ELF_MAGIC or (
        len(head) == 4 and struct.unpack("<I", head)[0] == _FATBIN_MAGIC
    )
    if not is_binary and view[-1] != 0:
        return bytes(view) + b"\0"
    return view
