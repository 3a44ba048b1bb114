"""Call plans: per procedure, how each end codes a call without codec objects or dataclasses.

Written into the generated module as ordinary code, next to the procedure table:

- arguments that are all fixed-size scalars (int, unsigned int, hyper, unsigned hyper, float,
  double, and typedefs of them) are one ``struct.Struct``: the client's ``encode_args(*args)``
  packs them at once, the server's ``decode_args(body)`` gives the handler's positional
  arguments as a tuple (a body of another size is an ``XdrDecodeError``: GARBAGE_ARGS);
- a result that is a status (``int``) or a union ``switch (int err) { case 0: T value;
  default: void; }`` with T a scalar or a struct of scalars is one ``struct.Struct`` too: the
  client's ``decode_reply(body)`` gives ``(err, *fields)`` (the fields None on failure), the
  server's ``encode_result(value)`` packs the handler's union value.

Anything the fast path does not take (a value out of range, an unexpected body) goes to the
procedure's codecs, so errors and their messages are those of the codecs.
"""

from __future__ import annotations

from collections.abc import Callable
from struct import calcsize

from cricket_xdr.compiler import ir
from cricket_xdr.compiler.checks import Model

__all__ = ["PlanWriter"]

_FORMATS = {"int": "i", "unsigned int": "I", "hyper": "q", "unsigned hyper": "Q", "float": "f",
            "double": "d"}


class PlanWriter:
    """The plan code of a program's procedures; ``attr_of`` names a struct field's attribute."""

    def __init__(self, model: Model, attr_of: Callable[[ir.Declaration], str]) -> None:
        self.m = model
        self.attr_of = attr_of
        self.arg_plans: dict[tuple[str, ...], str] = {}  # (format, codecs...) -> prefix
        self.result_plans: dict[str, str] = {}  # result codec -> prefix

    def scalar(self, d: ir.Declaration) -> str | None:
        """The struct format character of a fixed-size scalar declaration, else None."""
        if d.kind != "plain" or d.type is None:
            return None
        base = self.m.underlying(d.type)
        if isinstance(base, ir.TypeSpec):
            return _FORMATS.get(base.name)
        return None

    def result_shape(self, d: ir.Declaration) -> tuple[str, list[str]] | None:
        """("status", []) for an int result; ("union", [attribute paths]) with their format for
        an err union of fixed-size success value; None for anything else."""
        if self.scalar(d) == "i" and d.type is not None and d.type.name == "int":
            return "", []
        if d.kind != "plain" or d.type is None:
            return None
        union = self.m.underlying(d.type)
        if not isinstance(union, ir.UnionDef) or len(union.arms) != 1:
            return None
        if self.scalar(union.discriminant) != "i" or union.default is None:
            return None
        arm = union.arms[0]
        if union.default.kind != "void" or [c.resolved for c in arm.cases] != [0]:
            return None
        fmt = self.scalar(arm.decl)
        if fmt is not None:
            return fmt, ["value"]
        if arm.decl.kind != "plain" or arm.decl.type is None:
            return None
        struct = self.m.underlying(arm.decl.type)
        if not isinstance(struct, ir.StructDef):
            return None
        fmts = [self.scalar(f) for f in struct.fields]
        if not fmts or None in fmts:
            return None
        paths = [f"value.{self.attr_of(f)}" for f in struct.fields]
        return "".join(fmts), paths  # type: ignore[arg-type]

    def procedure(self, proc: ir.ProcedureDef, arg_codecs: list[str], result_codec: str
                  ) -> tuple[list[str], str | None]:  # fmt: skip
        """(module lines, the ``_Plan(...)`` expression or None) of one procedure."""
        lines: list[str] = []
        fields: list[str] = []
        fmts = [self.scalar(a) for a in proc.args]
        if proc.args and None not in fmts:
            fmt = ">" + "".join(fmts)  # type: ignore[arg-type]
            key = (fmt, *arg_codecs)
            p = self.arg_plans.get(key)
            if p is None:
                p = self.arg_plans[key] = f"_plan_a{len(self.arg_plans) + 1}_"
                lines += self.arg_code(p, fmt, arg_codecs)
            fields += [f"encode_args={p}encode_args", f"decode_args={p}decode_args"]
        shape = self.result_shape(proc.result)
        if shape is not None:
            fmt, paths = shape
            if not paths:  # a status
                fields.append("decode_reply=_xdr_plan_status")
            elif result_codec in self.result_plans:
                p = self.result_plans[result_codec]
                fields += [f"decode_reply={p}decode_reply", f"encode_result={p}encode_result"]
            else:
                p = self.result_plans[result_codec] = f"_plan_{result_codec.lstrip('_')}_"
                full = ">i" + fmt
                nones = ", None" * len(paths)
                values = ", ".join(f"v.{path}" for path in paths)
                lines += [
                    f"{p}R = _struct.Struct({full!r})",
                    f"{p}RP, {p}RU = {p}R.pack, {p}R.unpack",
                    "",
                    "",
                    f"def {p}decode_reply(body: Any) -> tuple[Any, ...]:",
                    f"    if len(body) == {calcsize(full)}:",
                    f"        r = {p}RU(body)",
                    "        if r[0] == 0:",
                    "            return r  # type: ignore[no-any-return]",
                    "    elif len(body) == 4:",
                    "        (err,) = _xdr_plan_I(body)",
                    "        if err != 0:",
                    f"            return (err{nones})",
                    f"    v = {result_codec}.decode(body)  # what else the codec takes, or its error",
                    "    if v.value is None:",
                    f"        return (v.err{nones})",
                    f"    return (v.err, {values})",
                    "",
                    "",
                    f"def {p}encode_result(v: Any) -> list[Any]:",
                    "    try:",
                    "        if v.err == 0:",
                    f"            return [{p}RP(0, {values})]",
                    "        if v.value is None:",
                    "            return [_xdr_plan_IP(v.err)]",
                    "    except (_struct.error, TypeError, OverflowError, AttributeError):",
                    "        pass  # the codec says what is wrong",
                    "    enc = _xdr.Encoder()",
                    f"    {result_codec}.pack(enc, v)",
                    "    return [b for b in enc.buffers() if len(b)]",
                    "",
                    "",
                ]
                fields += [f"decode_reply={p}decode_reply", f"encode_result={p}encode_result"]
        if not fields:
            return [], None
        return lines, f"_Plan({', '.join(fields)})"

    @staticmethod
    def arg_code(p: str, fmt: str, arg_codecs: list[str]) -> list[str]:
        """The coders of arguments that are all fixed-size scalars."""
        size = calcsize(fmt)
        names = [f"a{i}" for i in range(len(arg_codecs))]
        params = ", ".join(f"{n}: Any" for n in names)
        return [
            f"{p}A = _struct.Struct({fmt!r})",
            f"{p}AP, {p}AU = {p}A.pack, {p}A.unpack",
            "",
            "",
            f"def {p}encode_args({params}) -> Any:",
            "    try:",
            f"        return {p}AP({', '.join(names)})",
            "    except (_struct.error, TypeError, OverflowError):",
            "        pass  # the codecs say what is wrong",
            "    enc = _xdr.Encoder()",
            *[f"    {c}.pack(enc, {n})" for c, n in zip(arg_codecs, names, strict=True)],
            "    return enc.buffers()",
            "",
            "",
            f"def {p}decode_args(body: Any) -> tuple[Any, ...]:",
            f"    if len(body) != {size}:",
            f"        raise _xdr.XdrDecodeError('arguments of %d bytes, not {size}' % len(body))",
            f"    return {p}AU(body)  # type: ignore[no-any-return]",
            "",
            "",
        ]

    @staticmethod
    def shared() -> list[str]:
        """Module lines the plans share (before any plan)."""
        return [
            "_xdr_plan_I = _struct.Struct('>i').unpack",
            "_xdr_plan_IP = _struct.Struct('>i').pack",
            "",
            "",
            "def _xdr_plan_status(body: Any) -> tuple[int]:",
            "    if len(body) == 4:",
            "        return _xdr_plan_I(body)  # type: ignore[no-any-return]",
            "    return (_xdr.xdr_int.decode(body),)",
            "",
            "",
        ]
