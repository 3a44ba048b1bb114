"""Stage 3: a checked model -> the source of one deterministic Python module.

The module holds constants, ``IntEnum`` classes, dataclasses for structs and unions, one
``xdr_<Name>`` codec per named type (over :mod:`cricket_xdr.xdr`; the struct coders are
written by :mod:`.emit_coders`) and, per program version, ``<VERSION>_Client`` and
``<VERSION>_Server`` classes whose procedures carry their facts (docs/internals.md section 1).
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable

from cricket_xdr.compiler import ir
from cricket_xdr.compiler.checks import PREDEFINED, Model
from cricket_xdr.compiler.emit_coders import StructCoders
from cricket_xdr.compiler.emit_plans import PlanWriter
from cricket_xdr.compiler.facts import handle_kinds

__all__ = ["emit", "pyname"]

_BUILTIN_CODECS = {
    "int": "_xdr.xdr_int",
    "unsigned int": "_xdr.xdr_u_int",
    "hyper": "_xdr.xdr_hyper",
    "unsigned hyper": "_xdr.xdr_u_hyper",
    "float": "_xdr.xdr_float",
    "double": "_xdr.xdr_double",
    "bool": "_xdr.xdr_bool",
}
_BUILTIN_PY = {
    "int": "int",
    "unsigned int": "int",
    "hyper": "int",
    "unsigned hyper": "int",
    "float": "float",
    "double": "float",
    "bool": "bool",
}
_STRUCT_RESERVED = {"encode", "decode"}
_PY_BUILTINS = {"list", "bytes", "str", "int", "float", "bool"}


def pyname(name: str, reserved: set[str] | frozenset[str] = frozenset()) -> str:
    """``name`` with a trailing underscore when it is a Python keyword or reserved here."""
    return f"{name}_" if keyword.iskeyword(name) or name in reserved else name


class _Emitter:
    def __init__(self, model: Model, source_path: str) -> None:
        self.m = model
        self.path = source_path
        self.out: list[str] = []
        self.exports: list[str] = []
        self.shared_codecs: dict[str, str] = {}  # expression -> module-level name
        self.user_names = {pyname(n) for n in model.constants} | {pyname(n) for n in model.types}
        self.needs_builtins = False
        self.needs_facts = False
        self.needs_plans = False
        self.plans = PlanWriter(model, self.field_attr)
        self.coders = {
            d.name: StructCoders(model, d, self.struct_class, self.field_attr)
            for d in model.spec.definitions
            if isinstance(d, ir.StructDef)
        }

    def struct_class(self, name: str) -> str:
        return pyname(name)

    @staticmethod
    def field_attr(d: ir.Declaration) -> str:
        return pyname(d.name or "", _STRUCT_RESERVED)

    def w(self, line: str = "") -> None:
        self.out.append(line)

    def export(self, name: str) -> None:
        self.exports.append(name)

    # expressions
    @staticmethod
    def tuple(items: Iterable[str]) -> str:
        items = list(items)
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    def value(self, v: ir.Value) -> str:
        if v.name is not None:
            return pyname(v.name) if v.name not in PREDEFINED else str(v.resolved)
        text = v.text.lstrip("-")
        if text.startswith(("0x", "0X")) or text == "0" or not text.startswith("0"):
            return v.text
        return str(v.resolved)

    def elem_codec(self, t: ir.TypeSpec) -> str:
        return _BUILTIN_CODECS[t.name] if t.builtin else f"xdr_{t.name}"

    def codec(self, d: ir.Declaration) -> str:
        size = self.value(d.size) if d.size is not None else "None"
        if d.kind == "void":
            return "_xdr.xdr_void"
        if d.kind == "fixed_opaque":
            return f"_xdr.FixedOpaque({size})"
        if d.kind == "var_opaque":
            return f"_xdr.VarOpaque({size})"
        if d.kind == "string":
            return f"_xdr.String({size})"
        assert d.type is not None
        elem = self.elem_codec(d.type)
        return {
            "plain": elem,
            "fixed_array": f"_xdr.FixedArray({elem}, {size})",
            "var_array": f"_xdr.VarArray({elem}, {size})",
            "optional": f"_xdr.Optional({elem})",
        }[d.kind]

    def elem_type(self, t: ir.TypeSpec) -> str:
        return _BUILTIN_PY[t.name] if t.builtin else pyname(t.name)

    def py_type(self, d: ir.Declaration) -> str:
        if d.kind == "void":
            return "None"
        if d.kind in ("fixed_opaque", "var_opaque"):
            return "bytes"
        if d.kind == "string":
            return "str"
        assert d.type is not None
        elem = self.elem_type(d.type)
        if d.kind in ("fixed_array", "var_array"):
            return f"list[{elem}]"
        if d.kind == "optional":
            return f"{elem} | None"
        return elem

    def alias_value(self, d: ir.Declaration) -> str:
        """The runtime Python type a typedef names (builtins reached past names of the spec)."""
        if d.kind in ("plain", "optional") and d.type is not None and not d.type.builtin:
            return self.elem_type(d.type)
        value = "list" if d.kind in ("fixed_array", "var_array") else self.py_type(d)
        if value in _PY_BUILTINS and value in self.user_names:
            self.needs_builtins = True
            return f"_builtins.{value}"
        return value

    # sections
    def header(self) -> None:
        name = self.path.replace("\\", "/").rsplit("/", 1)[-1]
        self.w(f"# DO NOT EDIT: generated by cricket-xdrgen from {self.path}")
        self.w(f'"""XDR types and ONC RPC stubs of {name}."""')
        self.w()
        self.w("from __future__ import annotations")
        self.w()
        self.w("import dataclasses as _dc")
        self.w("import enum as _enum")
        self.w("from typing import Any")
        self.w()
        self.w("from cricket_xdr import xdr as _xdr")
        self.w("from cricket_xdr.stubs import Pending as _Pending")
        self.w("from cricket_xdr.stubs import Procedure as _Procedure")
        self.w()
        self.w("__all__ = __ALL__")

    def constants(self) -> None:
        lines = []
        for d in self.m.spec.definitions:
            if isinstance(d, ir.ConstDef):
                lines.append(f"{pyname(d.name)} = {self.value(d.value)}")
                self.export(pyname(d.name))
            elif isinstance(d, ir.ProgramDef):
                lines.append(f"{pyname(d.name)} = {self.value(d.number)}")
                self.export(pyname(d.name))
                for v in d.versions:
                    if pyname(v.name) not in self.exports:
                        lines.append(f"{pyname(v.name)} = {self.value(v.number)}")
                        self.export(pyname(v.name))
                    for p in v.procedures:
                        if pyname(p.name) not in self.exports:
                            lines.append(f"{pyname(p.name)} = {self.value(p.number)}")
                            self.export(pyname(p.name))
        if lines:
            self.w()
            self.w()
            self.out += lines

    def enum(self, e: ir.EnumDef) -> None:
        cls = pyname(e.name)
        self.w()
        self.w()
        self.w(f"class {cls}(_enum.IntEnum):")
        self.w(f'    """enum {e.name}."""')
        self.w()
        for item in e.items:
            self.w(f"    {pyname(item.name)} = {item.resolved}")
        self.w()
        self.w()
        for item in e.items:
            self.w(f"{pyname(item.name)} = {cls}.{pyname(item.name)}")
        self.export(cls)
        for item in e.items:
            self.export(pyname(item.name))

    def in_class(self, annotation: str, members: set[str]) -> str:
        """``annotation`` as written inside a class body whose members may shadow builtins
        (a field named ``bytes`` would otherwise become the type of later annotations)."""
        shadowed = _PY_BUILTINS & members
        if not shadowed:
            return annotation
        self.needs_builtins = True
        return re.sub(
            r"(?<![\w.])(" + "|".join(sorted(shadowed)) + r")\b", r"_builtins.\1", annotation
        )

    def methods(self, cls: str, codec: str, members: set[str] | None = None) -> None:
        self.w()
        self.w(f"    def encode(self) -> {self.in_class('bytes', members or set())}:")
        self.w('        """The XDR encoding of this value."""')
        self.w(f"        return {codec}.encode(self)")
        self.w()
        self.w("    @classmethod")
        self.w(f"    def decode(cls, data: Any) -> {cls}:")
        self.w('        """Decode a whole buffer (trailing bytes are an error)."""')
        self.w(f"        return {codec}.decode(data)  # type: ignore[no-any-return]")

    def struct(self, s: ir.StructDef) -> None:
        cls = pyname(s.name)
        self.w()
        self.w()
        self.w("@_dc.dataclass(slots=True)")
        self.w(f"class {cls}:")
        self.w(f'    """struct {s.name}."""')
        self.w()
        members = {pyname(f.name or "", _STRUCT_RESERVED) for f in s.fields}
        for f in s.fields:
            annotation = self.in_class(self.py_type(f), members)
            self.w(f"    {pyname(f.name or '', _STRUCT_RESERVED)}: {annotation}")
        coders = self.coders[s.name]
        if coders.all_scalar:
            self.out += coders.methods(self.in_class("bytes", members))
        else:
            self.methods(cls, f"xdr_{s.name}", members)
        self.export(cls)

    def union(self, u: ir.UnionDef) -> None:
        cls = pyname(u.name)
        disc = pyname(u.discriminant.name or "", _STRUCT_RESERVED)
        reserved = _STRUCT_RESERVED | {"value", disc}
        self.w()
        self.w()
        self.w("@_dc.dataclass(slots=True)")
        self.w(f"class {cls}:")
        self.w(f'    """union {u.name}: ``{disc}`` selects the arm; ``value`` holds its value."""')
        self.w()
        assert u.discriminant.type is not None
        members = {disc, "value"}
        members |= {pyname(a.decl.name, reserved) for a in u.arms if a.decl.name is not None}
        if u.default is not None and u.default.name is not None:
            members.add(pyname(u.default.name, reserved))
        self.w(f"    {disc}: {self.in_class(self.elem_type(u.discriminant.type), members)}")
        self.w("    value: Any = None")
        explicit = sorted({c.resolved for arm in u.arms for c in arm.cases if c.resolved is not None})
        props = []
        for arm in u.arms:
            if arm.decl.name is not None:
                arm_cases = sorted({c.resolved for c in arm.cases if c.resolved is not None})
                props.append((arm.decl.name, f"frozenset({arm_cases!r})"))
        if u.default is not None and u.default.name is not None:
            props.append((u.default.name, "None"))
        if props:
            self.w()
            explicit_set = f"frozenset({explicit!r})"
            for name, cases in props:
                self.w(f"    {pyname(name, reserved)} = _xdr.arm_property(")
                self.w(f"        {u.name!r}, {name!r}, {disc!r}, {cases}, {explicit_set}")
                self.w("    )")
        self.methods(cls, f"xdr_{u.name}", members)
        self.export(cls)

    def typedef_order(self) -> list[ir.TypedefDef]:
        typedefs = {d.name: d for d in self.m.spec.definitions if isinstance(d, ir.TypedefDef)}
        order: list[ir.TypedefDef] = []
        done: set[str] = set()

        def visit(t: ir.TypedefDef) -> None:
            if t.name in done:
                return
            done.add(t.name)
            dep = t.decl.type
            if dep is not None and not dep.builtin and dep.name in typedefs:
                visit(typedefs[dep.name])
            order.append(t)

        for t in typedefs.values():
            visit(t)
        return order

    def codecs(self) -> None:
        defs = self.m.spec.definitions
        self.w()
        self.w()
        self.w("# Codecs, named like rpcgen's C functions.")
        for d in defs:
            if isinstance(d, ir.EnumDef):
                self.w(f"xdr_{d.name} = _xdr.Enum({pyname(d.name)})")
            elif isinstance(d, ir.StructDef):
                self.w(f"xdr_{d.name} = _xdr.Struct({d.name!r})")
            elif isinstance(d, ir.UnionDef):
                self.w(f"xdr_{d.name} = _xdr.Union({d.name!r})")
        typedefs = self.typedef_order()
        for t in typedefs:
            self.w(f"xdr_{t.name} = {self.codec(t.decl)}")
        for d in defs:
            if isinstance(d, ir.StructDef):
                self.w()
                self.w()
                self.out += self.coders[d.name].functions()
        if self.coders:
            self.w()
            self.w()
        for d in defs:
            if isinstance(d, ir.StructDef):
                coders = self.coders[d.name]
                self.w(f"xdr_{d.name}.define(")
                self.w(f"    {pyname(d.name)},")
                self.w("    [")
                for f in d.fields:
                    attr = pyname(f.name or "", _STRUCT_RESERVED)
                    self.w(f"        ({attr!r}, {self.codec(f)}),")
                self.w("    ],")
                self.w(f"    coders=({coders.prefix}pack, {coders.prefix}unpack),")
                if coders.all_scalar:
                    self.w(f"    whole=({pyname(d.name)}.encode, {pyname(d.name)}.decode),")
                if coders.is_list_node:
                    self.w(f"    head=({coders.prefix}head_pack, {coders.prefix}head_unpack),")
                self.w(")")
            elif isinstance(d, ir.UnionDef):
                disc = pyname(d.discriminant.name or "", _STRUCT_RESERVED)
                self.w(f"xdr_{d.name}.define(")
                self.w(f"    {pyname(d.name)},")
                self.w(f"    {disc!r},")
                self.w(f"    {self.codec(d.discriminant)},")
                self.w("    [")
                for arm in d.arms:
                    self.w(f"        ({self.tuple(self.value(c) for c in arm.cases)}, "
                           f"{self.codec(arm.decl)}),")
                self.w("    ],")
                if d.default is not None:
                    self.w(f"    default={self.codec(d.default)},")
                self.w(")")
        enums = sorted({e for c in self.coders.values() for e in c.enums})
        bindings = [line for c in self.coders.values() for line in c.bindings()]
        if enums or bindings:
            self.w()
            self.w("# What the struct coders call: enum members, the functions of other codecs.")
            self.out += [f"_{e}__members = {e}.members" for e in enums]
            self.out += bindings
        if typedefs:
            self.w()
            self.w("# Typedefs: the Python type each name stands for.")
            for t in typedefs:
                self.w(f"{pyname(t.name)} = {self.alias_value(t.decl)}")
                self.export(pyname(t.name))
        for d in defs:
            if isinstance(d, ir.EnumDef | ir.StructDef | ir.UnionDef):
                self.export(f"xdr_{d.name}")
        for t in typedefs:
            self.export(f"xdr_{t.name}")

    def proc_codec(self, d: ir.Declaration) -> str:
        """A procedure's argument or result codec, built once at module level."""
        expr = self.codec(d)
        if expr.startswith(("_xdr.xdr_", "xdr_")):
            return expr
        if expr not in self.shared_codecs:
            self.shared_codecs[expr] = f"_codec{len(self.shared_codecs) + 1}"
        return self.shared_codecs[expr]

    def arg_names(self, proc: ir.ProcedureDef) -> list[str]:
        names = []
        for i, a in enumerate(proc.args, 1):
            name = a.name or f"arg{i}"
            names.append(pyname(name, {"self", "ctx", "timeout"}))
        return names

    def program(self, p: ir.ProgramDef) -> None:
        prog = p.number.text if p.number.name is None else f"{p.number.resolved:#x}"
        for v in p.versions:
            vers = v.number.resolved
            self.plan_code(v)
            self.client(p, v, prog, vers)
            self.server(p, v, prog, vers)

    def plan_code(self, v: ir.VersionDef) -> None:
        """The call plans of a version's procedures (cricket_xdr.compiler.emit_plans)."""
        lines: list[str] = []
        self.plan_of: dict[str, str] = {}
        for proc in v.procedures:
            code, plan = self.plans.procedure(
                proc, [self.proc_codec(a) for a in proc.args], self.proc_codec(proc.result)
            )
            lines += code
            if plan is not None:
                self.plan_of[proc.name] = plan
        if not self.plan_of:
            return
        self.w()
        self.w()
        self.w(f"# Call plans of {v.name}: fixed-size arguments and results as one struct each.")
        if not self.needs_plans:
            self.out += self.plans.shared()
        else:
            self.w()
            self.w()
        self.needs_plans = True
        while lines and not lines[-1]:
            lines.pop()
        self.out += lines

    def client(self, p: ir.ProgramDef, v: ir.VersionDef, prog: str, vers: int | None) -> None:
        cls = f"{v.name}_Client"
        self.w()
        self.w()
        self.w(f"class {cls}:")
        self.w(f'    """Client of program {p.name} ({prog}) version {v.name} ({vers})."""')
        self.w()
        self.w("    def __init__(self, rpc: Any) -> None:")
        self.w("        self._rpc = rpc")
        for proc in v.procedures:
            names = self.arg_names(proc)
            params = "".join(f", {n}: {self.py_type(a)}" for n, a in zip(names, proc.args, strict=True))
            result = self.py_type(proc.result)
            rcodec = self.proc_codec(proc.result)
            num = proc.number.resolved
            method = pyname(proc.name)
            self.w()
            self.w(f"    def {method}(self{params}, *, timeout: float | None = None) -> {result}:")
            self.w(f'        """Call {proc.name} ({num}) and wait for its result."""')
            args = self.pack_args(proc, names)
            self.w(f"        body = self._rpc.call({prog}, {vers}, {num}, {args}, timeout=timeout)")
            self.w(f"        return {rcodec}.decode(body)  # type: ignore[no-any-return]")
            self.w()
            self.w(f"    def {proc.name}_async(self{params}) -> _Pending:")
            self.w(f'        """Send {proc.name} ({num}); ``.result(timeout)`` gives the result."""')
            args = self.pack_args(proc, names)
            self.w(f"        call = self._rpc.call_async({prog}, {vers}, {num}, {args})")
            self.w(f"        return _Pending(call, {rcodec}.decode)")
        self.export(cls)

    def pack_args(self, proc: ir.ProcedureDef, names: list[str]) -> str:
        if not proc.args:
            return 'b""'
        self.w("        _enc = _xdr.Encoder()")
        for name, a in zip(names, proc.args, strict=True):
            self.w(f"        {self.proc_codec(a)}.pack(_enc, {name})")
        return "_enc.buffers()"

    def facts(self, proc: ir.ProcedureDef) -> str:
        """The ``_Facts(...)`` of a procedure, or "" when it states none."""
        names = {f.name for f in proc.facts}
        parts = []
        if "pipelined" in names:
            parts.append("pipelined=True")
        replay = next((n for n in ("replay", "readonly", "uncounted") if n in names), None)
        if replay:
            parts.append(f"replay={replay!r}")
        views = tuple(i for i, a in enumerate(proc.args) if any(f.name == "view" for f in a.facts))
        if views:
            parts.append(f"views={views!r}")
        handles = tuple((i, handle_kinds(f.arg)) for i, a in enumerate(proc.args)
                        for f in a.facts if f.name == "handle")
        if handles:
            parts.append(f"handles={handles!r}")
        if not parts:
            return ""
        self.needs_facts = True
        return f"_Facts({', '.join(parts)})"

    def server(self, p: ir.ProgramDef, v: ir.VersionDef, prog: str, vers: int | None) -> None:
        cls = f"{v.name}_Server"
        self.w()
        self.w()
        self.w(f"class {cls}:")
        self.w(f'    """Service of program {p.name} version {v.name}: subclass it, override what')
        self.w('    you serve; the rest answer PROC_UNAVAIL."""')
        self.w()
        self.w(f"    PROGRAM = {prog}")
        self.w(f"    VERSION = {vers}")
        self.w("    PROCEDURES: dict[int, _Procedure] = {")
        for proc in v.procedures:
            codecs = self.tuple(self.proc_codec(a) for a in proc.args) if proc.args else "()"
            self.w(f"        {proc.number.resolved}: _Procedure(")
            facts = self.facts(proc)
            plan = self.plan_of.get(proc.name)
            self.w(f"            {proc.number.resolved}, {pyname(proc.name)!r}, {codecs}, "
                   f"{self.proc_codec(proc.result)}{',' if facts or plan else ''}")
            if facts:
                self.w(f"            {facts},")
            if plan:
                self.w(f"            plan={plan},")
            self.w("        ),")
        self.w("    }")
        for proc in v.procedures:
            names = self.arg_names(proc)
            params = "".join(f", {n}: {self.py_type(a)}" for n, a in zip(names, proc.args, strict=True))
            self.w()
            self.w(f"    def {pyname(proc.name)}(self, ctx: Any{params}) -> {self.py_type(proc.result)}:")
            self.w(f'        """{proc.name} ({proc.number.resolved}): not served unless overridden."""')
            self.w(f'        raise NotImplementedError("{p.name}.{v.name}.{proc.name}")')
        self.export(cls)

    def run(self) -> str:
        self.header()
        self.constants()
        for d in self.m.spec.definitions:
            if isinstance(d, ir.EnumDef):
                self.enum(d)
            elif isinstance(d, ir.StructDef):
                self.struct(d)
            elif isinstance(d, ir.UnionDef):
                self.union(d)
        if self.m.types:
            self.codecs()
        before, self.out = self.out, []
        for d in self.m.spec.definitions:
            if isinstance(d, ir.ProgramDef):
                self.program(d)
        programs, self.out = self.out, before
        if self.shared_codecs:
            self.w()
            self.w("# Codecs of procedure arguments and results without a name of their own.")
            for expr, name in self.shared_codecs.items():
                self.w(f"{name} = {expr}")
        self.out += programs
        built = [f"xdr_{d.name}" for d in self.m.spec.definitions
                 if isinstance(d, ir.EnumDef | ir.StructDef | ir.UnionDef)]
        built += [f"xdr_{t.name}" for t in self.typedef_order()]
        built += list(self.shared_codecs.values())
        if built:
            self.w()
            self.w()
            self.w("# Every codec is built now, at import (none is built while threads use it).")
            self.w("_xdr.ready_all(")
            self.out += [f"    {name}," for name in built]
            self.w(")")
        if self.coders or self.needs_plans:
            at = self.out.index("import enum as _enum")
            self.out.insert(at + 1, "import struct as _struct")
        if self.needs_plans:
            at = self.out.index("from cricket_xdr.stubs import Pending as _Pending")
            self.out.insert(at + 1, "from cricket_xdr.stubs import Plan as _Plan")
        if self.needs_facts:
            at = self.out.index("from cricket_xdr.stubs import Pending as _Pending")
            self.out.insert(at, "from cricket_xdr.stubs import Facts as _Facts")
        if self.needs_builtins:
            self.out[self.out.index("import dataclasses as _dc")] = (
                "import builtins as _builtins\nimport dataclasses as _dc"
            )
        text = "\n".join(self.out) + "\n"
        exports = "".join(f"    {n!r},\n" for n in self.exports)
        return text.replace("__all__ = __ALL__", f"__all__ = [\n{exports}]" if exports else "__all__: list[str] = []", 1)


def emit(model: Model, source_path: str) -> str:
    """The generated module's source; ``source_path`` is named in its first line."""
    return _Emitter(model, source_path).run()
