"""Reads kernel names, parameter layouts and globals out of cubins, fatbins and PTX.

A cubin is an ELF file (pyelftools reads it); what the sim needs lives in:

| where                          | what                                                        |
| ------------------------------ | ----------------------------------------------------------- |
| symbol `name` in `.text.name`  | a function; a kernel when `.nv.constant0.name` exists       |
| `.nv.info.name` records        | EIATTR_KPARAM_INFO (ordinal, offset, size per parameter),   |
|                                | EIATTR_PARAM_CBANK / CBANK_PARAM_SIZE (parameter bytes)     |
| `.nv.info` records             | EIATTR_REGCOUNT and EIATTR_FRAME_SIZE per function symbol   |
| `.nv.shared.name`              | static shared memory of kernel `name`                       |
| STT_OBJECT in `.nv.global*`    | module globals (`.nv.global.init` holds initial contents)   |

An `.nv.info` record is `format:u8 attribute:u8` then, by format, nothing (NVAL), a u16
value (HVAL), or a u16 length and that many bytes (SVAL). A KPARAM_INFO payload is
`index:u32 ordinal:u16 offset:u16 flags:u32` with the size in flags bits 18..31.

A fatbin is a header `magic:u32=0xBA55ED50 version:u16 header_size:u16 payload_size:u64`
followed by entries `kind:u16 (1 PTX, 2 ELF) version:u16 header_size:u32 size:u64 ...
arch:u32@28 ... flags:u64@40`; an entry compressed with zstd (flags & 0x8000, CUDA 13's
libraries) is a zstd frame and is decompressed; one compressed the older way (flags & 0x2000)
cannot be read here. PTX is read with regular expressions: `.entry` parameter lists and `.global` lines.
"""

from __future__ import annotations

import io
import re
import struct
from dataclasses import dataclass, field

import zstandard
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_IMAGE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
    ParamInfo,
)

CUDA_ERROR_NO_BINARY_FOR_GPU = 209
CUDA_ERROR_INVALID_PTX = 218

FATBIN_MAGIC = 0xBA55ED50
FATBIN_KIND_PTX = 1
FATBIN_KIND_ELF = 2
FATBIN_COMPRESSED_OLD = 0x2000  # older toolkits' own compression: not read here
FATBIN_ZSTD = 0x8000  # a zstd frame (CUDA 13: cuBLAS, the toolkit's default)
MAX_ENTRY_BYTES = 1 << 30  # a decompressed entry larger than this is refused

EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4
EIATTR_MAX_THREADS = 0x05
EIATTR_PARAM_CBANK = 0x0A
EIATTR_REQNTID = 0x10
EIATTR_FRAME_SIZE = 0x11
EIATTR_KPARAM_INFO = 0x17
EIATTR_CBANK_PARAM_SIZE = 0x19
EIATTR_REGCOUNT = 0x2F


@dataclass(frozen=True)
class KernelInfo:
    """What the sim knows of one kernel."""

    name: str
    params: tuple[ParamInfo, ...]
    param_bytes: int
    num_regs: int | None = None
    shared_bytes: int = 0
    local_bytes: int = 0
    max_threads: int | None = None  # from __launch_bounds__ / .maxntid / .reqntid


@dataclass(frozen=True)
class GlobalVar:
    name: str
    size: int
    init: bytes  # `size` bytes; zeros when not initialized


@dataclass(frozen=True)
class ModuleImage:
    kind: str  # "cubin" or "ptx"
    arch: int  # 90 for sm_90 / compute_90
    kernels: dict[str, KernelInfo] = field(default_factory=dict)
    globals: dict[str, GlobalVar] = field(default_factory=dict)


def parse_image(image: bytes | memoryview, device_arch: int = 90) -> ModuleImage:
    """Parse a cubin, fatbin or PTX image as cuModuleLoadData would receive it."""
    data = bytes(image)
    if data[:4] == b"\x7fELF":
        return parse_cubin(data, device_arch)
    if len(data) >= 4 and struct.unpack_from("<I", data)[0] == FATBIN_MAGIC:
        return parse_fatbin(data, device_arch)
    text = data.split(b"\0", 1)[0]
    if re.search(rb"^\s*\.version\s", text, re.M) or b".entry" in text:
        return parse_ptx(text.decode("utf-8", "replace"), device_arch)
    raise CudaError(
        CUDA_ERROR_INVALID_IMAGE,
        f"cuModuleLoadData: image of {len(data)} bytes is neither ELF, fatbin nor PTX "
        f"(starts with {data[:8].hex()})",
    )


# -- cubin -------------------------------------------------------------------------------
def cubin_arch(elf: ELFFile) -> int:
    return (elf.header.e_flags >> 8) & 0xFF


def parse_cubin(data: bytes, device_arch: int = 90) -> ModuleImage:
    try:
        elf = ELFFile(io.BytesIO(data))
        return _read_cubin(elf, device_arch)
    except (ELFError, struct.error, ValueError, KeyError) as exc:
        raise CudaError(CUDA_ERROR_INVALID_IMAGE, f"cuModuleLoadData: bad cubin: {exc}") from exc


def _read_cubin(elf: ELFFile, device_arch: int) -> ModuleImage:
    arch = cubin_arch(elf)
    if arch // 10 != device_arch // 10 or arch > device_arch:
        raise CudaError(
            CUDA_ERROR_NO_BINARY_FOR_GPU,
            f"cuModuleLoadData: cubin is for sm_{arch}, the device is sm_{device_arch}",
        )
    symtab = elf.get_section_by_name(".symtab")
    symbols = list(symtab.iter_symbols()) if isinstance(symtab, SymbolTableSection) else []
    sections = {s.name: s for s in elf.iter_sections()}
    per_symbol = _global_info(sections.get(".nv.info"))

    kernels: dict[str, KernelInfo] = {}
    globals_: dict[str, GlobalVar] = {}
    for index, sym in enumerate(symbols):
        kind = sym["st_info"]["type"]
        shndx = sym["st_shndx"]
        if not isinstance(shndx, int) or shndx == 0:
            continue
        section = elf.get_section(shndx)
        if kind == "STT_FUNC" and section.name == f".text.{sym.name}":
            info = sections.get(f".nv.info.{sym.name}")
            records = list(_records(info.data())) if info is not None else []
            has_params = any(attr == EIATTR_KPARAM_INFO for _, attr, _ in records)
            if f".nv.constant0.{sym.name}" not in sections and not has_params:
                continue  # a device function, not a kernel
            shared = sections.get(f".nv.shared.{sym.name}")
            kernels[sym.name] = _kernel_from_records(
                sym.name,
                records,
                num_regs=per_symbol.get((EIATTR_REGCOUNT, index)),
                local_bytes=per_symbol.get((EIATTR_FRAME_SIZE, index), 0),
                shared_bytes=shared["sh_size"] if shared is not None else 0,
            )
        elif kind == "STT_OBJECT" and section.name.startswith((".nv.global", ".nv.constant")):
            if section.name.startswith(".nv.constant0"):
                continue
            size = sym["st_size"]
            if section["sh_type"] == "SHT_NOBITS":
                init = bytes(size)
            else:
                start = sym["st_value"]
                init = section.data()[start : start + size].ljust(size, b"\0")
            globals_[sym.name] = GlobalVar(sym.name, size, init)
    return ModuleImage("cubin", arch, kernels, globals_)


def _records(data: bytes):
    """Yield (format, attribute, payload) of every `.nv.info` record."""
    pos = 0
    while pos + 4 <= len(data):
        fmt, attr = data[pos], data[pos + 1]
        if fmt == EIFMT_SVAL:
            (length,) = struct.unpack_from("<H", data, pos + 2)
            yield fmt, attr, data[pos + 4 : pos + 4 + length]
            pos += 4 + length
        elif fmt in (EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL):
            yield fmt, attr, data[pos + 2 : pos + 4]
            pos += 4
        else:
            raise ValueError(f".nv.info record at {pos} has unknown format {fmt}")


def _global_info(section) -> dict[tuple[int, int], int]:
    """(attribute, symbol index) -> value for the per-function records of `.nv.info`."""
    found: dict[tuple[int, int], int] = {}
    if section is None:
        return found
    for fmt, attr, payload in _records(section.data()):
        if fmt == EIFMT_SVAL and attr in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE) and len(payload) >= 8:
            sym, value = struct.unpack_from("<II", payload)
            found[(attr, sym)] = value
    return found


def _kernel_from_records(
    name: str, records, *, num_regs: int | None, local_bytes: int, shared_bytes: int
) -> KernelInfo:
    params: dict[int, ParamInfo] = {}
    param_bytes = None
    max_threads = None
    for fmt, attr, payload in records:
        if attr == EIATTR_KPARAM_INFO and len(payload) >= 12:
            _, ordinal, offset, flags = struct.unpack_from("<IHHI", payload)
            params[ordinal] = ParamInfo(offset, (flags >> 18) & 0x3FFF)
        elif attr == EIATTR_PARAM_CBANK and len(payload) >= 8:
            param_bytes = struct.unpack_from("<H", payload, 6)[0]
        elif attr == EIATTR_CBANK_PARAM_SIZE and fmt == EIFMT_HVAL and param_bytes is None:
            param_bytes = struct.unpack_from("<H", payload)[0]
        elif attr in (EIATTR_REQNTID, EIATTR_MAX_THREADS) and len(payload) >= 12:
            x, y, z = struct.unpack_from("<III", payload)
            max_threads = max(x, 1) * max(y, 1) * max(z, 1)
    ordered = tuple(params[i] for i in sorted(params))
    if param_bytes is None:
        param_bytes = max((p.offset + p.size for p in ordered), default=0)
    return KernelInfo(name, ordered, param_bytes, num_regs, shared_bytes, local_bytes, max_threads)


# -- fatbin ------------------------------------------------------------------------------
@dataclass(frozen=True)
class FatbinEntry:
    kind: int
    arch: int
    flags: int
    payload: bytes

    @property
    def compressed(self) -> bool:
        """Compressed in a way this module cannot read."""
        return bool(self.flags & FATBIN_COMPRESSED_OLD) and not self.flags & FATBIN_ZSTD

    def contents(self) -> bytes:
        """The entry's bytes, decompressed where it is a zstd frame."""
        if not self.flags & FATBIN_ZSTD:
            return self.payload
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(self.payload)
            out = reader.read(MAX_ENTRY_BYTES + 1)
        except zstandard.ZstdError as exc:
            raise CudaError(
                CUDA_ERROR_INVALID_IMAGE,
                f"cuModuleLoadData: fatbin entry {self.describe()} is not a valid zstd frame: {exc}",
            ) from exc
        if len(out) > MAX_ENTRY_BYTES:
            raise CudaError(
                CUDA_ERROR_INVALID_IMAGE,
                f"cuModuleLoadData: fatbin entry {self.describe()} decompresses to more than "
                f"{MAX_ENTRY_BYTES} bytes",
            )
        return out

    def describe(self) -> str:
        what = "sm" if self.kind == FATBIN_KIND_ELF else "compute"
        form = "ELF" if self.kind == FATBIN_KIND_ELF else "PTX"
        return f"{what}_{self.arch} {form}"


def fatbin_entries(data: bytes) -> list[FatbinEntry]:
    """Every entry of every fatbin in `data` (fatbins may be concatenated)."""
    entries: list[FatbinEntry] = []
    pos = 0
    while pos + 16 <= len(data):
        magic, _version, header_size, size = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:
            break
        entry = pos + header_size
        end = entry + size
        if end > len(data):
            raise CudaError(
                CUDA_ERROR_INVALID_IMAGE,
                f"cuModuleLoadData: fatbin at {pos} claims {size} bytes, {len(data) - entry} left",
            )
        while entry + 48 <= end:
            kind, _, ehs, esize = struct.unpack_from("<HHIQ", data, entry)
            (arch,) = struct.unpack_from("<I", data, entry + 28)
            (flags,) = struct.unpack_from("<Q", data, entry + 40)
            if ehs == 0:
                break
            payload = data[entry + ehs : entry + ehs + esize]
            entries.append(FatbinEntry(kind, arch, flags, payload))
            entry += ehs + esize
        pos = end
    return entries


def parse_fatbin(data: bytes, device_arch: int = 90) -> ModuleImage:
    entries = fatbin_entries(data)
    elfs = [
        e
        for e in entries
        if e.kind == FATBIN_KIND_ELF and e.arch // 10 == device_arch // 10 and e.arch <= device_arch
    ]
    ptxs = [e for e in entries if e.kind == FATBIN_KIND_PTX and e.arch <= device_arch]
    candidates = sorted(elfs, key=lambda e: -e.arch) + sorted(ptxs, key=lambda e: -e.arch)
    for entry in candidates:
        if entry.compressed:
            continue
        if entry.kind == FATBIN_KIND_ELF:
            return parse_cubin(entry.contents(), device_arch)
        return parse_ptx(entry.contents().split(b"\0", 1)[0].decode("utf-8", "replace"), device_arch)
    if candidates:
        names = ", ".join(e.describe() for e in candidates)
        raise CudaError(
            CUDA_ERROR_NOT_SUPPORTED,
            f"cuModuleLoadData: fatbin entry {names} is compressed; the sim backend reads "
            "uncompressed and zstd entries (build with -Xfatbin -compress-mode=size, or "
            "-Xfatbin -compress=false)",
        )
    have = ", ".join(e.describe() for e in entries) or "no entries"
    raise CudaError(
        CUDA_ERROR_NO_BINARY_FOR_GPU,
        f"cuModuleLoadData: fatbin has no image for sm_{device_arch} ({have})",
    )


# -- PTX ---------------------------------------------------------------------------------
_PTX_TYPE_SIZE = {
    "b8": 1, "u8": 1, "s8": 1, "pred": 1,
    "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
    "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
    "b64": 8, "u64": 8, "s64": 8, "f64": 8,
    "b128": 16,
}  # fmt: skip
_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*(?:\(([^)]*)\))?([^{;]*)\{")
_TARGET = re.compile(r"^\s*\.target\s+(?:sm|compute)_(\d+)", re.M)
_GLOBAL = re.compile(
    r"^[ \t]*((?:\.(?:visible|weak|extern)\s+)*)\.(global|const)\s+([^;{]*?)\s*(=\s*[^;]*)?;",
    re.M,
)
_DECL = re.compile(
    r"(?:\.align\s+(\d+)\s+)?(?:\.v(\d)\s+)?\.(\w+)\s+([\w$.]+)((?:\s*\[\s*\d*\s*\])*)$"
)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse_ptx(text: str, device_arch: int = 90) -> ModuleImage:
    text = _strip_comments(text)
    target = _TARGET.search(text)
    arch = int(target.group(1)) if target else device_arch
    if arch > device_arch:
        raise CudaError(
            CUDA_ERROR_NO_BINARY_FOR_GPU,
            f"cuModuleLoadData: PTX targets sm_{arch}, the device is sm_{device_arch}",
        )
    kernels: dict[str, KernelInfo] = {}
    for match in _ENTRY.finditer(text):
        name, params_text, directives = match.group(1), match.group(2) or "", match.group(3)
        params: list[ParamInfo] = []
        offset = 0
        for decl in filter(None, (p.strip() for p in params_text.split(","))):
            size, align = _param_layout(name, decl)
            offset = -(-offset // align) * align
            params.append(ParamInfo(offset, size))
            offset += size
        kernels[name] = KernelInfo(
            name, tuple(params), offset, max_threads=_ptx_max_threads(directives)
        )
    globals_: dict[str, GlobalVar] = {}
    for match in _GLOBAL.finditer(text):
        if "extern" in match.group(1):
            continue
        var = _ptx_global(match.group(3), match.group(4))
        if var is not None:
            globals_[var.name] = var
    return ModuleImage("ptx", arch, kernels, globals_)


def _param_layout(kernel: str, decl: str) -> tuple[int, int]:
    """(size, alignment) of one `.param` declaration of an entry."""
    words = decl.split()
    types = [w[1:] for w in words if w.startswith(".") and w[1:] in _PTX_TYPE_SIZE]
    if not words or words[0] != ".param" or not types:
        raise CudaError(
            CUDA_ERROR_INVALID_PTX,
            f"cuModuleLoadData: kernel {kernel!r}: cannot read parameter {decl!r}",
        )
    elem = _PTX_TYPE_SIZE[types[0]]
    count = 1
    for dim in re.findall(r"\[\s*(\d+)\s*\]", decl):
        count *= int(dim)
    align_match = re.search(r"\.align\s+(\d+)", decl)
    # with `.ptr`, `.align N` is the pointee's alignment, not the parameter's
    align = int(align_match.group(1)) if align_match and ".ptr" not in words else elem
    return elem * count, max(align, 1)


def _ptx_max_threads(directives: str) -> int | None:
    match = re.search(r"\.(?:maxntid|reqntid)\s+([\d\s,]+)", directives)
    if not match:
        return None
    total = 1
    for dim in match.group(1).split(","):
        if dim.strip():
            total *= int(dim)
    return total


def _ptx_global(decl: str, init_text: str | None) -> GlobalVar | None:
    match = _DECL.search(decl.strip())
    if not match:
        return None
    _align, vec, type_name, name, dims = match.groups()
    if type_name not in _PTX_TYPE_SIZE:
        return None
    elem = _PTX_TYPE_SIZE[type_name] * (int(vec) if vec else 1)
    count = 1
    for dim in re.findall(r"\[\s*(\d*)\s*\]", dims):
        count *= int(dim) if dim else 1
    size = elem * count
    init = bytearray(size)
    if init_text:
        values = re.findall(
            r"0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|[-+]?\w+(?:\.\w*)?", init_text[1:]
        )
        step = _PTX_TYPE_SIZE[type_name]
        for i, value in enumerate(values[: size // step]):
            init[i * step : (i + 1) * step] = _ptx_constant(value, type_name, step)
    return GlobalVar(name, size, bytes(init))


def _ptx_constant(value: str, type_name: str, size: int) -> bytes:
    if value[:2] in ("0f", "0F", "0d", "0D"):
        return int(value[2:], 16).to_bytes(size, "little")
    if type_name.startswith("f"):
        fmt = {2: "<e", 4: "<f", 8: "<d"}[size]
        return struct.pack(fmt, float(value))
    try:
        number = int(value, 0)
    except ValueError:
        number = 0  # generic(...) and symbol addresses are not resolved by the sim
    return (number & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
