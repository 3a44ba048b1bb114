"""The pack/unpack functions of each struct, written into the generated module as ordinary code.

Runs of scalar fields (and of structs made only of scalars, flattened) are coded with one
``struct.Struct``; any other field calls its codec's function. A struct of scalars only also
gets whole-buffer ``encode``/``decode`` methods without an Encoder or Decoder. The messages
are those of ``cricket_xdr.xdr.Struct``'s own functions (for structs defined by hand).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from struct import calcsize
from typing import Any

from cricket_xdr.compiler import ir
from cricket_xdr.compiler.checks import Model

__all__ = ["StructCoders"]

_FORMATS = {"int": "i", "unsigned int": "I", "hyper": "q", "unsigned hyper": "Q", "float": "f",
            "double": "d", "bool": "I"}


@dataclass
class _Leaf:
    fmt: str
    kind: str  # plain, bool, enum
    enum: str | None = None  # the enum's codec name


@dataclass
class StructCoders:
    """The code of one struct's coders."""

    model: Model
    struct: ir.StructDef
    class_of: Callable[[str], str]  # struct name -> its dataclass's name in the module
    attr_of: Callable[[ir.Declaration], str]  # field -> its attribute's name
    enums: set[str] = field(default_factory=set)  # enum codecs whose members are used

    @property
    def cls(self) -> str:
        return self.class_of(self.struct.name)

    @property
    def attrs(self) -> list[str]:
        return [self.attr_of(f) for f in self.struct.fields]

    @property
    def prefix(self) -> str:
        return f"_xdr_{self.struct.name}__"

    def shape(self, decl: ir.Declaration, seen: frozenset[str]) -> Any:
        """A _Leaf, (class, [(attr, shape)]) for a struct of scalars only, or None."""
        if decl.kind != "plain" or decl.type is None:
            return None
        base = self.model.underlying(decl.type)
        if isinstance(base, ir.TypeSpec):
            fmt = _FORMATS.get(base.name)
            if fmt is None:
                return None
            return _Leaf(fmt, "bool" if base.name == "bool" else "plain")
        if isinstance(base, ir.EnumDef):
            return _Leaf("i", "enum", f"xdr_{base.name}")
        if isinstance(base, ir.StructDef) and base.name not in seen:
            subs = []
            for f in base.fields:
                sub = self.shape(f, seen | {base.name})
                if sub is None:
                    return None
                subs.append((self.attr_of(f), sub))
            return self.class_of(base.name), subs
        return None

    def groups(self, count: int | None = None) -> list[tuple[str, list[int]]]:
        """Runs of fusable fields and single other ones, of the first ``count`` fields."""
        shapes = self.shapes()[:count]
        groups: list[tuple[str, list[int]]] = []
        for i, shape in enumerate(shapes):
            if shape is not None and groups and groups[-1][0] == "run":
                groups[-1][1].append(i)
            else:
                groups.append(("run" if shape is not None else "one", [i]))
        return groups

    def shapes(self) -> list[Any]:
        return [self.shape(f, frozenset({self.struct.name})) for f in self.struct.fields]

    @property
    def all_scalar(self) -> bool:
        groups = self.groups()
        return len(groups) == 1 and groups[0][0] == "run"

    # pieces shared by pack/unpack and encode/decode
    def _leaves(self, shape: Any, path: str, out: list[tuple[str, _Leaf]]) -> None:
        if isinstance(shape, _Leaf):
            out.append((path, shape))
        else:
            for attr, sub in shape[1]:
                self._leaves(sub, f"{path}.{attr}", out)

    def _pack_args(self, idxs: list[int], obj: str) -> tuple[str, str]:
        """(struct format, the pack arguments) of a run of fields of ``obj``."""
        shapes = self.shapes()
        leaves: list[tuple[str, _Leaf]] = []
        for i in idxs:
            self._leaves(shapes[i], f"{obj}.{self.attrs[i]}", leaves)
        args = []
        for path, leaf in leaves:
            if leaf.kind == "bool":
                args.append(f"(1 if {path} else 0)")
            elif leaf.kind == "enum":
                assert leaf.enum is not None
                self.enums.add(leaf.enum)
                args.append(f"_{leaf.enum}__members[{path}]")
            else:
                args.append(path)
        return ">" + "".join(leaf.fmt for _, leaf in leaves), ", ".join(args)

    def _unpack_run(self, idxs: list[int], start: int) -> tuple[list[str], list[str], list[str]]:
        """(variables, value expressions of the fields, checks) of a run; ``start`` numbers
        its variables."""
        shapes = self.shapes()
        run: list[tuple[str, _Leaf]] = []

        def walk(shape: Any) -> str:
            if isinstance(shape, _Leaf):
                var = f"a{start}_{len(run)}"
                run.append((var, shape))
                return var
            return f"{shape[0]}({', '.join(walk(sub) for _, sub in shape[1])})"

        exprs = [walk(shapes[i]) for i in idxs]
        name = self.struct.name
        checks = []
        for var, leaf in run:
            if leaf.kind == "bool":
                checks.append(f"if {var} > 1:")
                checks.append(f"    raise _xdr.XdrDecodeError('struct {name}: a bool is %d, "
                              f"neither 0 nor 1' % {var})")
                checks.append(f"{var} = {var} == 1")
            elif leaf.kind == "enum":
                assert leaf.enum is not None
                self.enums.add(leaf.enum)
                checks.append(f"{var} = _{leaf.enum}__members[{var}]")
        return [var for var, _ in run], exprs, checks

    # the module's code
    @property
    def is_list_node(self) -> bool:
        """``struct n { ...; n *next; }``: coded as a chain (needs ``head`` coders)."""
        last = self.struct.fields[-1]
        if last.kind == "plain" and last.type is not None:  # through a typedef of T *
            base = self.model.underlying(last.type)
            if isinstance(base, ir.TypedefDef):
                last = base.decl
        if last.kind != "optional" or last.type is None:
            return False
        return self.model.underlying(last.type) is self.struct

    def functions(self) -> list[str]:
        """Module-level lines: the run Structs and the pack and unpack functions (and those
        of every field but the last, for a list node)."""
        out = self._functions(len(self.struct.fields), "", structs=True)
        if self.all_scalar:
            out.insert(2, f"{self.prefix}W0 = {self.prefix}st0.unpack")
        if self.is_list_node:
            out += ["", "", *self._functions(len(self.struct.fields) - 1, "head_", structs=False)]
        return out

    def _functions(self, count: int, kind_of: str, *, structs: bool) -> list[str]:
        p, name, cls = self.prefix, self.struct.name, self.cls
        head: list[str] = []
        pack = [f"def {p}{kind_of}pack(enc: _xdr.Encoder, v: Any) -> None:", "    try:"]
        unpack = [f"def {p}{kind_of}unpack(dec: _xdr.Decoder) -> {cls}:", "    try:"]
        values: list[str] = []
        for g, (kind, idxs) in enumerate(self.groups(count)):
            if kind == "one":
                i = idxs[0]
                pack.append(f"        {p}p{i}(enc, v.{self.attrs[i]})")
                unpack.append(f"        f{i} = {p}u{i}(dec)")
                values.append(f"f{i}")
                continue
            fmt, args = self._pack_args(idxs, "v")
            if structs:
                head.append(f"{p}st{g} = _struct.Struct({fmt!r})")
                head.append(f"{p}S{g}, {p}U{g} = {p}st{g}.pack, {p}st{g}.unpack_from")
            pack.append(f"        enc.buf += {p}S{g}({args})")
            variables, exprs, checks = self._unpack_run(idxs, len(values))
            unpack.append("        pos = dec.pos")
            unpack.append(f"        {''.join(v + ', ' for v in variables)}= "
                          f"{p}U{g}(dec.mv, pos)")
            unpack.append(f"        dec.pos = pos + {calcsize(fmt)}")
            unpack += [f"        {c}" for c in checks]
            values += exprs
        if count == 0:
            pack.append("        pass")
            unpack.append("        pass")
        pack += [
            "    except RecursionError:",
            "        raise",
            "    except Exception as e:",
            f"        raise _xdr.XdrEncodeError(xdr_{name}.diagnose(v, e)) from None",
        ]
        unpack += [
            "    except _struct.error:",
            f"        raise _xdr.XdrDecodeError('struct {name}: data ends early at offset %d' "
            "% dec.pos) from None",
            "    except KeyError as e:",
            f"        raise _xdr.XdrDecodeError('struct {name}: %s is not a declared enum value' "
            "% e) from None",
            f"    return {cls}({', '.join(values + ['None'] * (len(self.attrs) - count))})",
        ]
        return [*head, *(["", ""] if head else []), *pack, "", "", *unpack]

    def methods(self, bytes_type: str) -> list[str]:
        """The class's whole-buffer encode/decode (a struct of scalars only)."""
        name, cls, p = self.struct.name, self.cls, self.prefix
        fmt, args = self._pack_args(list(range(len(self.attrs))), "self")
        variables, exprs, checks = self._unpack_run(list(range(len(self.attrs))), 0)
        return [
            "",
            f"    def encode(self) -> {bytes_type}:",
            '        """The XDR encoding of this value."""',
            "        try:",
            f"            return {p}S0({args})",
            "        except RecursionError:",
            "            raise",
            "        except Exception as e:",
            f"            raise _xdr.XdrEncodeError(xdr_{name}.diagnose(self, e)) from None",
            "",
            "    @classmethod",
            f"    def decode(cls, data: Any) -> {cls}:",
            '        """Decode a whole buffer (trailing bytes are an error)."""',
            "        try:",
            f"            {''.join(v + ', ' for v in variables)}= {p}W0(data)",
            "        except (_struct.error, TypeError):",
            f"            raise _xdr.struct_size_error({name!r}, {calcsize(fmt)}, data) "
            "from None",
            "        try:",
            *([f"            {c}" for c in checks] or ["            pass"]),
            "        except KeyError as e:",
            f"            raise _xdr.XdrDecodeError('struct {name}: %s is not a declared enum "
            "value' % e) from None",
            f"        return {cls}({', '.join(exprs)})",
        ]

    def bindings(self) -> list[str]:
        """Module-level lines, once every codec is defined: the functions of the fields that
        are not fused."""
        p, out = self.prefix, []
        for kind, idxs in self.groups():
            if kind == "one":
                i = idxs[0]
                out.append(f"{p}p{i} = xdr_{self.struct.name}.fields[{i}][1].packer()")
                out.append(f"{p}u{i} = xdr_{self.struct.name}.fields[{i}][1].unpacker()")
        return out
