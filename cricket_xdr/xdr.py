"""XDR (RFC 4506) runtime: encoder, decoder and one codec object per XDR type.

Generated modules (``cricket-xdrgen``) are thin declarations over this module. Every codec
has ``pack(enc, value)``, ``unpack(dec) -> value``, ``encode(value) -> bytes`` and
``decode(data) -> value``; ``pack``/``unpack`` are plain functions stored on the instance,
built once (a generated module builds all of its codecs at import, ``ready_all``). No code
is generated at run time: cricket-xdrgen writes each struct's functions into the generated
module (runs of fixed-size fields fused into one ``struct.Struct``); a struct defined by hand
gets equivalent closures.

Wire layout (every item is a multiple of 4 bytes, big-endian, padding bytes are zero):

=====================  ===================================================
type                   bytes
=====================  ===================================================
int, unsigned, enum,   4
bool
hyper, unsigned hyper  8
float / double         4 / 8 (IEEE 754)
opaque[n]              n, then zero padding to a multiple of 4
opaque<m>, string<m>   4 (length n <= m), n bytes, zero padding
T[n] / T<m>            n items / 4 (count n <= m), n items
T *                    4 (0 or 1), the item when 1
struct                 the fields in order
union                  4 (discriminant), the selected arm
void                   0
=====================  ===================================================

Decoding raises only :class:`XdrError` subclasses, whatever the input; lengths are checked
against the bound and the bytes left before anything is allocated. Padding is not checked.
"""

from __future__ import annotations

import operator
import struct
import threading
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "BIG_PAYLOAD",
    "Codec",
    "Decoder",
    "Encoder",
    "Enum",
    "FixedArray",
    "FixedOpaque",
    "Optional",
    "String",
    "Struct",
    "Union",
    "VarArray",
    "VarOpaque",
    "XdrDecodeError",
    "XdrEncodeError",
    "XdrError",
    "arm_property",
    "ready_all",
    "struct_size_error",
    "xdr_bool",
    "xdr_char",
    "xdr_double",
    "xdr_float",
    "xdr_hyper",
    "xdr_int",
    "xdr_long",
    "xdr_short",
    "xdr_u_char",
    "xdr_u_hyper",
    "xdr_u_int",
    "xdr_u_long",
    "xdr_u_short",
    "xdr_void",
]

BIG_PAYLOAD = 64 * 1024
"""Opaque payloads of at least this many bytes are kept by reference, not copied, when encoding
(and when decoding with ``views=True``: a read-only memoryview of the input)."""

UNBOUNDED = 0xFFFFFFFF

_U32 = struct.Struct(">I")
_pack_u32 = _U32.pack
_unpack_u32 = _U32.unpack_from
_PAD = (b"", b"\0\0\0", b"\0\0", b"\0")  # indexed by length % 4
_ZERO = b"\0\0\0\0"
_ONE = b"\0\0\0\1"


class XdrError(Exception):
    """Base of every XDR encoding or decoding error."""


class XdrDecodeError(XdrError):
    """The bytes are not a valid encoding of the expected type."""


class XdrEncodeError(XdrError):
    """The value cannot be encoded as the declared type."""


class Encoder:
    """Append-only XDR output: small items go into one bytearray, big payloads by reference."""

    __slots__ = ("buf", "_pieces")

    def __init__(self) -> None:
        self.buf = bytearray()
        self._pieces: list[Any] | None = None

    def add_big(self, data: memoryview, pad: bytes) -> None:
        """Append ``data`` without copying it, then ``pad``."""
        if self._pieces is None:
            self._pieces = []
        if self.buf:
            self._pieces.append(self.buf)
        self._pieces.append(data)
        self.buf = bytearray(pad)

    def buffers(self) -> list[Any]:
        """The encoded bytes as a list of bytes-like pieces (for scatter/gather sends)."""
        if not self._pieces:
            return [self.buf]
        return [*self._pieces, self.buf] if self.buf else list(self._pieces)

    def getvalue(self) -> bytes:
        """The encoded bytes joined into one ``bytes``."""
        if not self._pieces:
            return bytes(self.buf)
        return b"".join(self.buffers())

    def __len__(self) -> int:
        return sum(memoryview(p).nbytes for p in self.buffers())


class Decoder:
    """Reads XDR items from a bytes-like object through a memoryview.

    With ``views``, variable-length opaque data of BIG_PAYLOAD bytes or more decodes as a
    read-only memoryview of ``data`` instead of a copy (the caller keeps ``data`` unchanged).
    """

    __slots__ = ("mv", "pos", "views")

    def __init__(self, data: Any, *, views: bool = False) -> None:
        try:
            mv = memoryview(data)
        except TypeError:
            raise XdrDecodeError(f"expected a bytes-like object, got {type(data).__name__}") from None
        if mv.format != "B" or mv.ndim != 1:
            mv = mv.cast("B") if mv.c_contiguous else memoryview(mv.tobytes())
        self.mv = mv
        self.pos = 0
        self.views = views

    def remaining(self) -> int:
        """Bytes not yet read."""
        return len(self.mv) - self.pos

    def done(self) -> None:
        """Raise :class:`XdrDecodeError` if bytes are left over."""
        left = len(self.mv) - self.pos
        if left:
            raise XdrDecodeError(f"{left} trailing bytes after the value at offset {self.pos}")


def _short(what: str, dec: Decoder, need: int) -> XdrDecodeError:
    return XdrDecodeError(
        f"{what}: need {need} bytes at offset {dec.pos}, only {len(dec.mv) - dec.pos} left"
    )


def _read_len(what: str, dec: Decoder, bound: int) -> int:
    """Read a length/count word and check it against ``bound``."""
    try:
        (n,) = _unpack_u32(dec.mv, dec.pos)
    except struct.error:
        raise _short(what, dec, 4) from None
    if n > bound:
        raise XdrDecodeError(f"{what}: length {n} exceeds the bound {bound}")
    dec.pos += 4
    return n


_BUILD_LOCK = threading.RLock()  # one codec build at a time (a build builds the types it uses)


class Codec:
    """An XDR type: ``pack``/``unpack`` are plain functions built by ``ready()`` (on first use
    unless built before)."""

    name: str = "?"
    fmt: str | None = None  # struct format char when the value is one fixed-size scalar
    kind: str = "plain"  # how a fused scalar is checked: plain, bool, enum

    def __init__(self) -> None:
        self._state = 0  # 0: not built, 1: building, 2: built
        self.pack: Callable[[Encoder, Any], None] = self._lazy_pack
        self.unpack: Callable[[Decoder], Any] = self._lazy_unpack

    def _build(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        raise NotImplementedError

    def ready(self) -> None:
        """Build ``pack``/``unpack`` (and those of the types used) if not done yet. Another
        thread waits for a build in progress; the building thread itself, reaching this type
        again through a recursive type, gets the late-binding functions (`packer`)."""
        if self._state == 2:
            return
        with _BUILD_LOCK:
            if self._state:
                return
            self._state = 1
            try:
                self.pack, self.unpack = self._build()
            except BaseException:
                self._state = 0
                raise
            self._state = 2

    def _lazy_pack(self, enc: Encoder, value: Any) -> None:
        self.ready()
        self.pack(enc, value)

    def _lazy_unpack(self, dec: Decoder) -> Any:
        self.ready()
        return self.unpack(dec)

    def packer(self) -> Callable[[Encoder, Any], None]:
        """The final pack function (a late-binding one while this codec is being built)."""
        self.ready()
        if self._state == 1:
            return lambda enc, value: self.pack(enc, value)
        return self.pack

    def unpacker(self) -> Callable[[Decoder], Any]:
        """The final unpack function (a late-binding one while this codec is being built)."""
        self.ready()
        if self._state == 1:
            return lambda dec: self.unpack(dec)
        return self.unpack

    def min_size(self, seen: frozenset[int] = frozenset()) -> int:
        """The fewest bytes any value of this type encodes to."""
        return 4

    def encode(self, value: Any) -> bytes:
        """Encode ``value`` into bytes."""
        enc = Encoder()
        try:
            self.pack(enc, value)
        except RecursionError:
            raise XdrEncodeError(f"{self.name}: value nested too deeply") from None
        return enc.getvalue()

    def decode(self, data: Any, *, views: bool = False) -> Any:
        """Decode a whole buffer; trailing bytes are an error. ``views``: see Decoder."""
        dec = Decoder(data, views=views)
        try:
            value = self.unpack(dec)
        except RecursionError:
            raise XdrDecodeError(f"{self.name}: data nested too deeply") from None
        dec.done()
        return value

    def __repr__(self) -> str:
        return f"<xdr codec {self.name}>"


class _Scalar(Codec):
    """A fixed-size scalar read and written with one struct format character."""

    def __init__(self, name: str, fmt: str, kind: str = "plain") -> None:
        super().__init__()
        self.name, self.fmt, self.kind = name, fmt, kind
        self._format = ">" + fmt
        self._size = struct.calcsize(self._format)
        self.ready()

    def min_size(self, seen: frozenset[int] = frozenset()) -> int:
        return self._size

    def _build(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        s = struct.Struct(self._format)
        spack, sunpack, size, name = s.pack, s.unpack_from, s.size, self.name

        def pack(enc: Encoder, value: Any) -> None:
            try:
                enc.buf += spack(value)
            except (struct.error, TypeError, OverflowError) as e:
                raise XdrEncodeError(f"{name}: cannot encode {value!r}: {e}") from None

        def unpack(dec: Decoder) -> Any:
            pos = dec.pos
            try:
                (value,) = sunpack(dec.mv, pos)
            except struct.error:
                raise _short(name, dec, size) from None
            dec.pos = pos + size
            return value

        return pack, unpack


class _Bool(_Scalar):
    def __init__(self) -> None:
        super().__init__("bool", "I", "bool")

    def _build(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        def pack(enc: Encoder, value: Any) -> None:
            enc.buf += _ONE if value else _ZERO

        def unpack(dec: Decoder) -> bool:
            pos = dec.pos
            try:
                (v,) = _unpack_u32(dec.mv, pos)
            except struct.error:
                raise _short("bool", dec, 4) from None
            if v > 1:
                raise XdrDecodeError(f"bool: {v} is neither 0 nor 1 at offset {pos}")
            dec.pos = pos + 4
            return v == 1

        return pack, unpack


class _Void(Codec):
    name = "void"

    def __init__(self) -> None:
        super().__init__()
        self.ready()

    def min_size(self, seen: frozenset[int] = frozenset()) -> int:
        return 0

    def _build(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        def pack(enc: Encoder, value: Any) -> None:
            return None

        def unpack(dec: Decoder) -> None:
            return None

        return pack, unpack


xdr_int = _Scalar("int", "i")
xdr_u_int = _Scalar("unsigned int", "I")
xdr_hyper = _Scalar("hyper", "q")
xdr_u_hyper = _Scalar("unsigned hyper", "Q")
xdr_float = _Scalar("float", "f")
xdr_double = _Scalar("double", "d")
xdr_bool = _Bool()
xdr_void = _Void()
# rpcgen's C spellings: all of them travel as 4-byte XDR integers.
xdr_long = xdr_short = xdr_char = xdr_int
xdr_u_long = xdr_u_short = xdr_u_char = xdr_u_int


class Enum(Codec):
    """An enum as an ``IntEnum`` class; undeclared values are refused both ways."""

    fmt = "i"
    kind = "enum"

    def __init__(self, cls: type) -> None:
        super().__init__()
        self.cls = cls
        self.name = cls.__name__
        self.members: dict[int, Any] = dict(cls._value2member_map_)  # type: ignore[attr-defined]
        self.ready()

    def min_size(self, seen: frozenset[int] = frozenset()) -> int:
        return 4

    def _build(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        members, name, spack = self.members, self.name, struct.Struct(">i").pack
        sunpack = struct.Struct(">i").unpack_from

        def pack(enc: Encoder, value: Any) -> None:
            try:
                enc.buf += spack(members[value])
            except (KeyError, TypeError):
                raise XdrEncodeError(f"enum {name}: {value!r} is not a declared value") from None

        def unpack(dec: Decoder) -> Any:
            pos = dec.pos
            try:
                (v,) = sunpack(dec.mv, pos)
                member = members[v]
            except struct.error:
                raise _short(f"enum {name}", dec, 4) from None
            except KeyError:
                raise XdrDecodeError(
                    f"enum {name}: {v} is not a declared value (offset {pos})"
                ) from None
            dec.pos = pos + 4
            return member

        return pack, unpack


def _as_bytes_view(name: str, value: Any) -> memoryview:
    try:
        mv = memoryview(value)
    except TypeError:
        raise XdrEncodeError(f"{name}: expected a bytes-like object, got {type(value).__name__}") from None
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B") if mv.c_contiguous else memoryview(mv.tobytes())
    return mv


class FixedOpaque(Codec):
    """``opaque name[n]``: exactly n bytes, padded."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.name = f"opaque[{size}]"
        self.ready()

    def min_size(self, seen: frozenset[int] = frozenset()) -> int:
        return self.size + (-self.size & 3)

    def _build(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        n, name = self.size, self.name
        pad = _PAD[n & 3]
        total = n + len(pad)

        def pack(enc: Encoder, value: Any) -> None:
            if type(value) is not bytes:
                value = _as_bytes_view(name, value)
            if len(value) != n:
                raise XdrEncodeError(f"{name}: got {len(value)} bytes, need exactly {n}")
            if n >= BIG_PAYLOAD:
                enc.add_big(memoryview(value), pad)
            else:
                enc.buf += value
                enc.buf += pad

        def unpack(dec: Decoder) -> bytes:
            pos = dec.pos
            if pos + total > len(dec.mv):
                raise _short(name, dec, total)
            dec.pos = pos + total
            return dec.mv[pos : pos + n].tobytes()

        return pack, unpack


class VarOpaque(Codec):
    """``opaque name<m>`` / ``opaque name<>``: length word, bytes, padding."""

    def __init__(self, bound: int | None = None) -> None:
        super().__init__()
        self.bound = UNBOUNDED if bound is None else bound
        self.name = f"opaque<{'' if bound is None else bound}>"
        self.ready()

    def _build(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        bound, name = self.bound, self.name

        def pack(enc: Encoder, value: Any) -> None:
            if type(value) is not bytes:
                value = _as_bytes_view(name, value)
            n = len(value)
            if n > bound:
                raise XdrEncodeError(f"{name}: {n} bytes exceed the bound {bound}")
            if n >= BIG_PAYLOAD:
                enc.buf += _pack_u32(n)
                enc.add_big(memoryview(value), _PAD[n & 3])
            else:
                buf = enc.buf
                buf += _pack_u32(n)
                buf += value
                buf += _PAD[n & 3]

        def unpack(dec: Decoder) -> bytes | memoryview:
            n = _read_len(name, dec, bound)
            pos = dec.pos
            end = pos + n
            if end + (-n & 3) > len(dec.mv):
                raise XdrDecodeError(
                    f"{name}: length {n} exceeds the {len(dec.mv) - pos} bytes left"
                )
            dec.pos = end + (-n & 3)
            if n >= BIG_PAYLOAD and dec.views:  # bulk data: a view of the input, no copy
                return dec.mv[pos:end].toreadonly()
            return dec.mv[pos:end].tobytes()

        return pack, unpack


class String(Codec):
    """``string name<m>`` / ``string name<>``: UTF-8 text; the bound counts bytes."""

    def __init__(self, bound: int | None = None) -> None:
        super().__init__()
        self.bound = UNBOUNDED if bound is None else bound
        self.name = f"string<{'' if bound is None else bound}>"
        self.ready()

    def _build(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        bound, name = self.bound, self.name

        def pack(enc: Encoder, value: Any) -> None:
            try:
                data = value.encode("utf-8")
            except AttributeError:
                raise XdrEncodeError(f"{name}: expected str, got {type(value).__name__}") from None
            except UnicodeError as e:
                raise XdrEncodeError(f"{name}: {e}") from None
            n = len(data)
            if n > bound:
                raise XdrEncodeError(f"{name}: {n} bytes of UTF-8 exceed the bound {bound}")
            buf = enc.buf
            buf += _pack_u32(n)
            buf += data
            buf += _PAD[n & 3]

        def unpack(dec: Decoder) -> str:
            n = _read_len(name, dec, bound)
            pos = dec.pos
            end = pos + n
            if end + (-n & 3) > len(dec.mv):
                raise XdrDecodeError(
                    f"{name}: length {n} exceeds the {len(dec.mv) - pos} bytes left"
                )
            try:
                text = str(dec.mv[pos:end], "utf-8")
            except UnicodeError as e:
                raise XdrDecodeError(f"{name}: invalid UTF-8 at offset {pos}: {e}") from None
            dec.pos = end + (-n & 3)
            return text

        return pack, unpack


def _scalar_check(elem: Codec) -> tuple[Callable[[Any], Any] | None, Callable[[Any], Any] | None]:
    """(encode check, decode conversion) for a fused scalar of kind bool or enum."""
    if elem.kind == "bool":
        return (lambda v: 1 if v else 0), None
    if elem.kind == "enum":
        members = elem.members  # type: ignore[attr-defined]
        return members.__getitem__, members.__getitem__
    return None, None


class _Array(Codec):
    """Shared pack/unpack of n items of one element type."""

    def __init__(self, elem: Codec) -> None:
        super().__init__()
        self.elem = elem

    def _items(self, what: str) -> tuple[Callable[..., None], Callable[[Decoder, int], list[Any]]]:
        elem = self.elem
        if elem.fmt is not None:
            fmt, size = elem.fmt, struct.calcsize(">" + elem.fmt)
            to_wire, from_wire = _scalar_check(elem)

            def pack_items(enc: Encoder, value: Any, n: int) -> None:
                try:
                    if to_wire is not None:
                        value = [to_wire(v) for v in value]
                    enc.buf += struct.pack(f">{n}{fmt}", *value)
                except (struct.error, TypeError, KeyError, OverflowError) as e:
                    raise XdrEncodeError(f"{what}: cannot encode an item: {e!r}") from None

            def unpack_items(dec: Decoder, n: int) -> list[Any]:
                pos = dec.pos
                try:
                    raw = struct.unpack_from(f">{n}{fmt}", dec.mv, pos)
                except struct.error:
                    raise _short(what, dec, n * size) from None
                dec.pos = pos + n * size
                if from_wire is not None:
                    try:
                        return [from_wire(v) for v in raw]
                    except KeyError as e:
                        raise XdrDecodeError(f"{what}: item {e} is not a declared {elem.name}") from None
                if elem.kind == "bool":
                    if any(v > 1 for v in raw):
                        raise XdrDecodeError(f"{what}: a bool item is neither 0 nor 1")
                    return [v == 1 for v in raw]
                return list(raw)

            return pack_items, unpack_items

        epack, eunpack = elem.packer(), elem.unpacker()

        def pack_items_loop(enc: Encoder, value: Any, n: int) -> None:
            for v in value:
                epack(enc, v)

        def unpack_items_loop(dec: Decoder, n: int) -> list[Any]:
            try:
                return [eunpack(dec) for _ in range(n)]
            except RecursionError:
                raise XdrDecodeError(f"{what}: data nested too deeply") from None

        return pack_items_loop, unpack_items_loop


class FixedArray(_Array):
    """``T name[n]``: exactly n items."""

    def __init__(self, elem: Codec, size: int) -> None:
        super().__init__(elem)
        self.size = size
        self.name = f"{elem.name}[{size}]"

    def min_size(self, seen: frozenset[int] = frozenset()) -> int:
        return self.size * self.elem.min_size(seen)

    def _build(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        n, name = self.size, self.name
        pack_items, unpack_items = self._items(name)

        def pack(enc: Encoder, value: Any) -> None:
            try:
                count = len(value)
            except TypeError:
                raise XdrEncodeError(f"{name}: expected a sequence, got {type(value).__name__}") from None
            if count != n:
                raise XdrEncodeError(f"{name}: got {count} items, need exactly {n}")
            pack_items(enc, value, n)

        def unpack(dec: Decoder) -> list[Any]:
            return unpack_items(dec, n)

        return pack, unpack


class VarArray(_Array):
    """``T name<m>`` / ``T name<>``: count word, then the items."""

    def __init__(self, elem: Codec, bound: int | None = None) -> None:
        super().__init__(elem)
        self.bound = UNBOUNDED if bound is None else bound
        self.name = f"{elem.name}<{'' if bound is None else bound}>"

    def _build(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        bound, name = self.bound, self.name
        pack_items, unpack_items = self._items(name)
        item_min = max(self.elem.min_size(), 1)

        def pack(enc: Encoder, value: Any) -> None:
            try:
                n = len(value)
            except TypeError:
                raise XdrEncodeError(f"{name}: expected a sequence, got {type(value).__name__}") from None
            if n > bound:
                raise XdrEncodeError(f"{name}: {n} items exceed the bound {bound}")
            enc.buf += _pack_u32(n)
            pack_items(enc, value, n)

        def unpack(dec: Decoder) -> list[Any]:
            n = _read_len(name, dec, bound)
            if n * item_min > len(dec.mv) - dec.pos:
                raise XdrDecodeError(
                    f"{name}: {n} items need at least {n * item_min} bytes, "
                    f"{len(dec.mv) - dec.pos} left"
                )
            return unpack_items(dec, n)

        return pack, unpack


class Optional(Codec):
    """``T *name``: ``None`` or a value. A self-linked list is coded iteratively."""

    def __init__(self, elem: Codec) -> None:
        super().__init__()
        self.elem = elem
        self.name = f"{elem.name} *"

    def _build(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        elem, name = self.elem, self.name
        if isinstance(elem, Struct) and elem.fields:
            last = elem.fields[-1][1]
            if isinstance(last, Optional) and last.elem is elem:
                return self._build_list(elem)
        epack, eunpack = elem.packer(), elem.unpacker()

        def pack(enc: Encoder, value: Any) -> None:
            if value is None:
                enc.buf += _ZERO
            else:
                enc.buf += _ONE
                epack(enc, value)

        def unpack(dec: Decoder) -> Any:
            pos = dec.pos
            try:
                (flag,) = _unpack_u32(dec.mv, pos)
            except struct.error:
                raise _short(name, dec, 4) from None
            dec.pos = pos + 4
            if flag == 0:
                return None
            if flag != 1:
                raise XdrDecodeError(f"{name}: presence flag {flag} is neither 0 nor 1")
            try:
                return eunpack(dec)
            except RecursionError:
                raise XdrDecodeError(f"{name}: data nested too deeply") from None

        return pack, unpack

    def _build_list(
        self, node: Struct
    ) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        """``struct n { ...; n *next; }``: walk the chain instead of recursing."""
        name = self.name
        link = node.fields[-1][0]
        head_pack, head_unpack = node.head_coders()

        def pack(enc: Encoder, value: Any) -> None:
            while value is not None:
                enc.buf += _ONE
                head_pack(enc, value)
                value = getattr(value, link)
            enc.buf += _ZERO

        def unpack(dec: Decoder) -> Any:
            first = prev = None
            while True:
                pos = dec.pos
                try:
                    (flag,) = _unpack_u32(dec.mv, pos)
                except struct.error:
                    raise _short(name, dec, 4) from None
                dec.pos = pos + 4
                if flag == 0:
                    return first
                if flag != 1:
                    raise XdrDecodeError(f"{name}: presence flag {flag} is neither 0 nor 1")
                item = head_unpack(dec)
                if prev is None:
                    first = item
                else:
                    setattr(prev, link, item)
                prev = item

        return pack, unpack


def _shape(codec: Codec, seen: frozenset[int]) -> Any:
    """A scalar codec, or (dataclass, [(attr, shape)]) for a struct made only of scalars
    (at any depth), or None: what can be fused into one struct.Struct."""
    if codec.fmt is not None:
        return codec
    if not isinstance(codec, Struct) or codec.cls is None or id(codec) in seen:
        return None
    subs = []
    for attr, sub in codec.fields:
        shape = _shape(sub, seen | {id(codec)})
        if shape is None:
            return None
        subs.append((attr, shape))
    return codec.cls, subs


def struct_size_error(name: str, size: int, data: Any) -> XdrDecodeError:
    """The error of a whole-buffer decode of an all-scalar struct given the wrong bytes."""
    try:
        got = memoryview(data).nbytes
    except TypeError:
        return XdrDecodeError(f"struct {name}: expected bytes, got {type(data).__name__}")
    return XdrDecodeError(f"struct {name}: expected exactly {size} bytes, got {got}")


def _leaf_in(codec: Codec) -> Callable[[Any], Any] | None:
    """How a fused scalar's value becomes its struct.Struct argument (None: as it is)."""
    if codec.kind == "bool":
        return lambda v: 1 if v else 0
    if codec.kind == "enum":
        return codec.members.__getitem__  # type: ignore[attr-defined, no-any-return]
    return None


def _leaf_out(codec: Codec, name: str) -> Callable[[Any], Any] | None:
    """How a fused scalar's decoded int becomes its value (None: as it is)."""
    if codec.kind == "bool":

        def as_bool(v: Any) -> bool:
            if v > 1:
                raise XdrDecodeError(f"struct {name}: a bool is {v}, neither 0 nor 1")
            return bool(v == 1)

        return as_bool
    if codec.kind == "enum":
        return codec.members.__getitem__  # type: ignore[attr-defined, no-any-return]
    return None


class _Run:
    """Consecutive scalar fields (and structs made only of scalars, flattened) coded with one
    ``struct.Struct``."""

    def __init__(self, name: str, shapes: list[tuple[str, Any]]) -> None:
        leaves: list[tuple[str, Codec]] = []

        def walk(shape: Any, path: str) -> None:
            if isinstance(shape, Codec):
                leaves.append((path, shape))
            else:
                for attr, sub in shape[1]:
                    walk(sub, f"{path}.{attr}")

        for attr, shape in shapes:
            walk(shape, attr)
        self.shapes = [shape for _, shape in shapes]
        self.st = struct.Struct(">" + "".join(c.fmt or "" for _, c in leaves))
        self.get = [operator.attrgetter(path) for path, _ in leaves]
        self.into = [_leaf_in(c) for _, c in leaves]
        self.out = [_leaf_out(c, name) for _, c in leaves]

    def args(self, v: Any) -> list[Any]:
        return [g(v) if f is None else f(g(v)) for g, f in zip(self.get, self.into, strict=True)]

    def values(self, raw: tuple[Any, ...]) -> list[Any]:
        """The fields' values from the decoded integers (nested structs rebuilt)."""
        leaves = iter([x if f is None else f(x) for x, f in zip(raw, self.out, strict=True)])

        def build(shape: Any) -> Any:
            if isinstance(shape, Codec):
                return next(leaves)
            return shape[0](*[build(sub) for _, sub in shape[1]])

        return [build(shape) for shape in self.shapes]


class Struct(Codec):
    """A struct: a dataclass whose fields are coded in order.

    Created empty (so types may refer to each other) and filled by :meth:`define`. Generated
    modules pass the pack/unpack functions cricket-xdrgen wrote for the struct (runs of
    scalar fields fused into one ``struct.Struct``); a struct defined without them gets
    equivalent ones built from its fields on first use.
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.cls: type | None = None
        self.fields: list[tuple[str, Codec]] = []
        self._head: tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]] | None = None

    def define(
        self,
        cls: type,
        fields: Iterable[tuple[str, Codec]],
        coders: tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]] | None = None,
        whole: tuple[Callable[[Any], bytes], Callable[[Any], Any]] | None = None,
        head: tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]] | None = None,
    ) -> Struct:
        """Set the dataclass and its ``(attribute, codec)`` fields, in wire order.

        ``coders``: its (pack, unpack), written by cricket-xdrgen; ``whole``: the (encode,
        decode) of a struct of scalars only, which work on whole buffers; ``head``: those of
        :meth:`head_coders`.
        """
        self.cls = cls
        self.fields = list(fields)
        self._head = head
        if coders is not None:
            self.pack, self.unpack = coders
            self._state = 2
        if whole is not None:
            self.encode, self.decode = whole  # type: ignore[method-assign, assignment]
        return self

    def min_size(self, seen: frozenset[int] = frozenset()) -> int:
        if id(self) in seen:
            return 0
        seen = seen | {id(self)}
        return sum(c.min_size(seen) for _, c in self.fields)

    def _build(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        pack, unpack, steps = self._coders(len(self.fields))
        if len(steps) == 1 and steps[0][0] == "run":
            self.encode, self.decode = self._whole(steps[0][1])  # type: ignore[method-assign, assignment]
        return pack, unpack

    def head_coders(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        """pack/unpack of every field but the last (which unpacks as ``None``)."""
        if self._head is not None:
            return self._head
        pack, unpack, _ = self._coders(len(self.fields) - 1)
        return pack, unpack

    def _coders(
        self, count: int
    ) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any], list[tuple[str, Any]]]:
        """pack/unpack of the first ``count`` fields (the others unpack as ``None``)."""
        if self.cls is None:
            raise XdrError(f"struct {self.name}: used before it was defined")
        name, cls, diagnose = self.name, self.cls, self.diagnose
        missing = [None] * (len(self.fields) - count)
        steps: list[tuple[str, Any]] = []  # ("one", (attr, pack, unpack)) or ("run", _Run)
        for attr, codec in self.fields[:count]:
            shape = _shape(codec, frozenset({id(self)}))
            if shape is None:
                steps.append(("one", (attr, codec.packer(), codec.unpacker())))
            elif steps and steps[-1][0] == "run":
                steps[-1][1].append((attr, shape))
            else:
                steps.append(("run", [(attr, shape)]))
        steps = [(kind, _Run(name, step) if kind == "run" else step) for kind, step in steps]

        def pack(enc: Encoder, v: Any) -> None:
            try:
                for kind, step in steps:
                    if kind == "run":
                        enc.buf += step.st.pack(*step.args(v))
                    else:
                        step[1](enc, getattr(v, step[0]))
            except RecursionError:
                raise
            except Exception as e:
                raise XdrEncodeError(diagnose(v, e)) from None

        def unpack(dec: Decoder) -> Any:
            values: list[Any] = []
            try:
                for kind, step in steps:
                    if kind == "run":
                        pos = dec.pos
                        raw = step.st.unpack_from(dec.mv, pos)
                        dec.pos = pos + step.st.size
                        values += step.values(raw)
                    else:
                        values.append(step[2](dec))
            except struct.error:
                raise XdrDecodeError(f"struct {name}: data ends early at offset {dec.pos}") from None
            except KeyError as e:
                raise XdrDecodeError(f"struct {name}: {e} is not a declared enum value") from None
            return cls(*values, *missing)

        return pack, unpack, steps

    def _whole(self, run: _Run) -> tuple[Callable[[Any], bytes], Callable[[Any], Any]]:
        """encode/decode of an all-scalar struct without an Encoder or Decoder."""
        name, cls, diagnose, st = self.name, self.cls, self.diagnose, run.st
        assert cls is not None

        def encode(v: Any) -> bytes:
            try:
                return st.pack(*run.args(v))
            except RecursionError:
                raise
            except Exception as e:
                raise XdrEncodeError(diagnose(v, e)) from None

        def decode(data: Any) -> Any:
            try:
                raw = st.unpack(data)
            except (struct.error, TypeError):
                raise struct_size_error(name, st.size, data) from None
            try:
                return cls(*run.values(raw))
            except KeyError as e:
                raise XdrDecodeError(f"struct {name}: {e} is not a declared enum value") from None

        return encode, decode

    def diagnose(self, value: Any, error: Exception) -> str:
        """Name the field that could not be encoded."""
        if self.cls is not None and not isinstance(value, self.cls):
            return f"struct {self.name}: expected {self.cls.__name__}, got {type(value).__name__}"
        for attr, codec in self.fields:
            try:
                codec.encode(getattr(value, attr))
            except Exception as e:
                return f"struct {self.name}: field {attr}: {e}"
        return f"struct {self.name}: {error}"


class Union(Codec):
    """A discriminated union: a dataclass ``(discriminant, value)``."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.cls: type | None = None

    def define(
        self,
        cls: type,
        disc_attr: str,
        disc: Codec,
        arms: Iterable[tuple[Iterable[int], Codec]],
        default: Codec | None = None,
    ) -> Union:
        """``arms``: (case values, codec) pairs (``xdr_void`` for void arms), in order."""
        self.cls, self.disc_attr, self.disc = cls, disc_attr, disc
        self.arms = {case: codec for cases, codec in arms for case in cases}
        self.default = default
        return self

    def min_size(self, seen: frozenset[int] = frozenset()) -> int:
        return 4

    def _build(self) -> tuple[Callable[[Encoder, Any], None], Callable[[Decoder], Any]]:
        if self.cls is None:
            raise XdrError(f"union {self.name}: used before it was defined")
        name, cls, attr = self.name, self.cls, self.disc_attr
        dpack, dunpack = self.disc.packer(), self.disc.unpacker()
        packs = {k: c.packer() for k, c in self.arms.items()}
        unpacks = {k: c.unpacker() for k, c in self.arms.items()}
        dflt_pack = self.default.packer() if self.default is not None else None
        dflt_unpack = self.default.unpacker() if self.default is not None else None

        def pack(enc: Encoder, value: Any) -> None:
            try:
                d = getattr(value, attr)
                v = value.value
            except AttributeError:
                raise XdrEncodeError(f"union {name}: expected {cls.__name__}, got {value!r}") from None
            arm = packs.get(d, dflt_pack)
            if arm is None:
                raise XdrEncodeError(f"union {name}: no arm for {attr}={d!r} and no default")
            dpack(enc, d)
            try:
                arm(enc, v)
            except XdrError as e:
                raise XdrEncodeError(f"union {name} ({attr}={d!r}): {e}") from None

        def unpack(dec: Decoder) -> Any:
            d = dunpack(dec)
            arm = unpacks.get(d, dflt_unpack)
            if arm is None:
                raise XdrDecodeError(f"union {name}: no arm for {attr}={d!r} and no default")
            return cls(d, arm(dec))

        return pack, unpack


def arm_property(
    union: str, arm: str, disc_attr: str, cases: frozenset[int] | None, explicit: frozenset[int]
) -> property:
    """Read-only property of a union arm: the value when that arm is selected.

    ``cases`` is None for the default arm (selected when no explicit case matches).
    """

    def get(self: Any) -> Any:
        d = getattr(self, disc_attr)
        if (d in cases) if cases is not None else (d not in explicit):
            return self.value
        raise AttributeError(f"union {union}: arm {arm!r} is not selected by {disc_attr}={d!r}")

    return property(get, doc=f"The {arm} arm of union {union}.")


def ready_all(*codecs: Codec) -> None:
    """Build every codec now (a generated module does at import, so no codec of it is built
    while threads use it)."""
    for codec in codecs:
        codec.ready()
