"""Generate the client's driver mirrors from one line each: cricket_client/driver.mirrors.

A line declares a function of cuda.bindings.driver and the procedure of rpc_spec/cricket.x that
does its work (the syntax and vocabulary are in the comment at the top of driver.mirrors):

    cuStreamWaitEvent(hStream: stream, hEvent: event, Flags: uint) = CU_STREAM_WAIT_EVENT

Everything else comes from the procedure as the XDR compiler reads it: the types of its
arguments and their facts (``@handle(kind)``: a conversion must hand it that kind of handle),
``@pipelined`` (posted, the mirror returns success at once), and its result (an int status,
or a union whose success value gives the outputs, one per field). A declaration that does not
fit its procedure is an error at ``file:line:column``, and nothing is written.

It also writes the native library's generated entries (cricket_client/native/
_entries_generated.py): every C function declared in cricket_client/native/signatures.py (or
families.py) without a hand-written entry converts its C arguments, calls the driver mirror of
its name (declared here or written by hand) and writes its output pointers; so a call declared
once is both the Python mirror and the native entry (generate_native).

Usage: python tools/gen_mirrors.py [--check]
The output is deterministic (no timestamps); `make stubs` runs it, and
tests/unit/test_mirrors_generated.py fails when the committed module is stale.
"""

from __future__ import annotations

import argparse
import builtins
import difflib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cricket_xdr.compiler import ir  # noqa: E402
from cricket_xdr.compiler.checks import Model, check  # noqa: E402
from cricket_xdr.compiler.emit_plans import PlanWriter  # noqa: E402
from cricket_xdr.compiler.emit_python import pyname  # noqa: E402
from cricket_xdr.compiler.facts import HANDLE_KINDS, handle_kinds  # noqa: E402
from cricket_xdr.compiler.parser import parse  # noqa: E402


def _constant(path: str, name: str) -> Any:
    """A literal constant of a client module, read without importing cricket_client (whose
    import needs the very modules this tool writes)."""
    import ast

    for node in ast.parse((ROOT / path).read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name):
            value = node.value
            if isinstance(value, ast.Call) and value.args:  # frozenset({...})
                value = value.args[0]
            return ast.literal_eval(value)
    raise LookupError(f"{path} has no constant {name}")


# Names of cuda.bindings' modules (the generated enum mirrors), and the results whose replay
# must give the same value: those calls keep `sync`, which hands the replay log the reply.
DRIVER_NAMES = frozenset(_constant("cricket_client/_enums.py", "DRIVER_NAMES"))
RUNTIME_NAMES = frozenset(_constant("cricket_client/_runtime_enums.py", "RUNTIME_NAMES"))
_IDENTITY_RESULTS = frozenset(_constant("cricket_client/replay.py", "_IDENTITY_RESULTS"))

DECLARATIONS = "cricket_client/driver.mirrors"
SPEC = "rpc_spec/cricket.x"
OUTPUT = "cricket_client/_driver_generated.py"
TOOL = "tools/gen_mirrors.py"

# C-typed conversions (cricket_client._args): run first, in parameter order -> the XDR type fed.
SCALARS = {
    "c_int": "int",
    "uint": "unsigned int",
    "ushort": "unsigned int",
    "uchar": "unsigned int",
    "size_t": "unsigned hyper",
    "u64": "unsigned hyper",
}
# Conversions of Python objects, made as the call is made: expression and what they feed
# ("cu_ptr", "cu_handle" of a kind, "string", or an XDR builtin).
OBJECTS = {
    "enum": ("int({p})", "int"),
    "device": ("as_int({p})", "int"),
    "ptr": ('_handle({p}, "{p}")', "cu_ptr"),
    "name": ("_name({p})", "string"),
    "stream": ("_stream({p})", "cu_handle"),
    **{kind: ('_handle({p}, "{p}")', "cu_handle") for kind in HANDLE_KINDS if kind != "stream"},
}
# The handle types of cricket_client._types (CUdevice, CUdeviceptr, CUstream, ...).
HANDLE_TYPES = tuple(n for n in _constant("cricket_client/_types.py", "__all__")
                     if n.startswith("CU") and n != "CUuuid")
OUTPUTS = ("int", "float", "CUuuid", *HANDLE_TYPES)
_INTEGERS = ("int", "unsigned int", "hyper", "unsigned hyper", "bool")

_LINE = re.compile(
    r"(?P<name>\w+)\s*\((?P<params>[^)]*)\)\s*(?:->\s*(?P<outs>[^=]*?)\s*)?="
    r"\s*(?P<proc>\w+)\s*(?:\((?P<wire>[^)]*)\))?\s*$"
)


class DeclarationError(Exception):
    """Every error found, one ``file:line:column: error: ...`` a line."""


@dataclass
class Item:
    """A name in a declaration and its 1-based column."""

    text: str
    column: int


@dataclass
class Decl:
    name: str
    params: list[tuple[Item, Item]]  # (parameter, conversion)
    outputs: list[Item]
    proc: Item
    wire: list[Item] | None
    line: int
    column: int


@dataclass
class Mirror:
    """A checked declaration, ready to write."""

    decl: Decl
    scalars: list[tuple[str, str]]  # (parameter, helper of cricket_client._args)
    args: list[str]  # the wire arguments as Python expressions
    pipelined: bool
    method: str  # "call" or "sync"
    fields: list[str]  # attribute paths of the outputs in a sync reply ("value", "value.ptr")


def _items(text: str, start: int) -> list[Item]:
    """Comma-separated items of `text`, which starts at 0-based column `start`."""
    out = []
    at = 0
    for part in text.split(","):
        stripped = part.strip()
        if stripped:
            out.append(Item(stripped, start + at + part.index(stripped) + 1))
        at += len(part) + 1
    return out


class _Reader:
    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()
        self.errors: list[tuple[int, int, str]] = []

    def error(self, line: int, column: int, message: str) -> None:
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        self.errors.append((line, column, f"{self.path}:{line}:{column}: error: {message}\n"
                                          f"    {src}\n    {' ' * (column - 1)}^"))

    def read(self) -> list[Decl]:
        decls = []
        for number, raw in enumerate(self.lines, 1):
            text = raw.split("#", 1)[0].rstrip()
            if not text.strip():
                continue
            m = _LINE.match(text)
            indent = len(text) - len(text.lstrip())
            if m is None or indent:
                self.error(number, indent + 1, "expected 'cuName(param: conversion, ...) "
                           "[-> output, ...] = PROCEDURE[(wire argument, ...)]'")
                continue
            params = []
            for item in _items(m.group("params"), m.start("params")):
                name, colon, conv = item.text.partition(":")
                if not colon or not name.strip().isidentifier() or not conv.strip():
                    self.error(number, item.column, f"expected 'param: conversion', found "
                               f"'{item.text}'")
                    continue
                conv_col = item.column + len(name) + 1 + (len(conv) - len(conv.lstrip()))
                params.append((Item(name.strip(), item.column), Item(conv.strip(), conv_col)))
            outs = _items(m.group("outs") or "", m.start("outs") if m.group("outs") else 0)
            wire = (None if m.group("wire") is None
                    else _items(m.group("wire"), m.start("wire")))
            decls.append(Decl(m.group("name"), params, outs,
                              Item(m.group("proc"), m.start("proc") + 1), wire, number, 1))
        return decls


def _spec(root: Path) -> Model:
    return check(parse((root / SPEC).read_text(encoding="utf-8"), SPEC))


def _procedures(model: Model) -> dict[str, ir.ProcedureDef]:
    procs = {}
    for d in model.spec.definitions:
        if isinstance(d, ir.ProgramDef):
            for v in d.versions:
                for p in v.procedures:
                    procs[p.name] = p
    return procs


class _Checker:
    """Checks declarations against their procedures and makes Mirrors of them."""

    def __init__(self, reader: _Reader, model: Model) -> None:
        self.r = reader
        self.m = model
        self.procs = _procedures(model)
        self.plans = PlanWriter(model, lambda d: pyname(d.name or ""))

    def xdr_type(self, arg: ir.Declaration) -> str:
        """What an argument is, in the words of OBJECTS/SCALARS."""
        if arg.kind == "string":
            return "string"
        if arg.kind != "plain" or arg.type is None:
            return arg.kind
        if arg.type.name in ("cu_ptr", "cu_handle"):
            return arg.type.name
        base = self.m.underlying(arg.type)
        if isinstance(base, ir.TypeSpec):
            return base.name
        if isinstance(base, ir.TypedefDef) and base.decl.kind == "string":
            return "string"
        return arg.type.name

    def reply(self, proc: ir.ProcedureDef) -> list[tuple[str, str]] | str:
        """(attribute path, kind) of each output field, or why the result does not fit."""
        d = proc.result
        if d.kind == "plain" and d.type is not None and d.type.name == "int":
            return []
        union = self.m.underlying(d.type) if d.kind == "plain" and d.type else None
        if (not isinstance(union, ir.UnionDef) or len(union.arms) != 1
                or union.default is None or union.default.kind != "void"
                or [c.resolved for c in union.arms[0].cases] != [0]):
            return (f"{proc.name} returns {d.type.name if d.type else d.kind}; a generated "
                    "mirror needs an int status or a union switch (int err) whose case 0 is the "
                    "value and default void")
        arm = union.arms[0].decl
        if arm.kind == "plain" and arm.type is not None:
            struct = self.m.underlying(arm.type)
            if isinstance(struct, ir.StructDef):
                return [(f"value.{pyname(f.name or '')}", self.field_kind(f)) for f in struct.fields]
        return [("value", self.field_kind(arm))]

    def field_kind(self, d: ir.Declaration) -> str:
        if d.kind == "fixed_opaque" and d.size is not None and d.size.resolved == 16:
            return "opaque16"
        if d.kind == "plain" and d.type is not None:
            base = self.m.underlying(d.type)
            if isinstance(base, ir.TypeSpec):
                if base.name in _INTEGERS:
                    return "integer"
                if base.name in ("float", "double"):
                    return "float"
        return d.kind if d.kind != "plain" or d.type is None else d.type.name

    def mirror(self, d: Decl) -> Mirror | None:
        err = self.r.error
        before = len(self.r.errors)
        if d.name not in DRIVER_NAMES:
            close = difflib.get_close_matches(d.name, DRIVER_NAMES, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            err(d.line, d.column, f"'{d.name}' is not a function of cuda.bindings.driver{hint}")
        proc = self.procs.get(d.proc.text)
        if proc is None:
            close = difflib.get_close_matches(d.proc.text, list(self.procs), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            err(d.line, d.proc.column, f"no procedure '{d.proc.text}' in {SPEC}{hint}")
            return None
        where = f"{proc.name} ({SPEC}:{proc.pos.line})"
        facts = {f.name for f in proc.facts}
        params: dict[str, Item] = {}
        for p, conv in d.params:
            if p.text in params:
                err(d.line, p.column, f"parameter '{p.text}' is declared twice")
            params[p.text] = conv
            if conv.text not in SCALARS and conv.text not in OBJECTS:
                err(d.line, conv.column, f"unknown conversion '{conv.text}' of '{p.text}'; known: "
                    + ", ".join([*SCALARS, *OBJECTS]))
        wire = d.wire if d.wire is not None else [Item(p.text, p.column) for p, _ in d.params]
        if len(wire) != len(proc.args):
            col = d.proc.column if d.wire is None else (wire[0].column if wire else d.proc.column)
            err(d.line, col, f"{where} takes {len(proc.args)} argument(s), the declaration "
                f"gives {len(wire)}")
            return None
        args: list[str] = []
        seen: set[str] = set()
        kinds = {i: ks for i, ks in _handle_facts(proc)}
        for i, (item, arg) in enumerate(zip(wire, proc.args, strict=True)):
            xdr = self.xdr_type(arg)
            wanted = kinds.get(i, ())
            what = f"argument {i + 1} of {where} ({xdr}"
            what += f" @handle({', '.join(wanted)}))" if wanted else ")"
            if re.fullmatch(r"-?\d+", item.text):
                if xdr not in ("int", "unsigned int", "hyper", "unsigned hyper") or wanted:
                    err(d.line, item.column, f"a literal cannot be {what}")
                args.append(item.text)
                continue
            conv = params.get(item.text)
            if conv is None:
                err(d.line, item.column, f"'{item.text}' is not a parameter of {d.name}")
                continue
            if item.text in seen:
                err(d.line, item.column, f"parameter '{item.text}' is sent twice")
            seen.add(item.text)
            if conv.text in SCALARS:
                if SCALARS[conv.text] != xdr or wanted:
                    err(d.line, conv.column, f"'{item.text}: {conv.text}' feeds {what}, which "
                        f"takes {_fits(xdr, wanted)}")
                args.append(item.text)
            elif conv.text in OBJECTS:
                expr, feeds = OBJECTS[conv.text]
                ok = feeds == xdr and (not wanted or conv.text in wanted)
                if feeds == "cu_handle" and not wanted:
                    ok = False
                if not ok:
                    err(d.line, conv.column, f"'{item.text}: {conv.text}' feeds {what}, which "
                        f"takes {_fits(xdr, wanted)}")
                args.append(expr.format(p=item.text))
        for p, _conv in d.params:
            if p.text not in seen and p.text in params:
                err(d.line, p.column, f"parameter '{p.text}' is not sent to {proc.name}")
        reply = self.reply(proc)
        if isinstance(reply, str):
            err(d.line, d.proc.column, reply)
            return None
        pipelined = "pipelined" in facts
        if pipelined and (reply or d.outputs):
            err(d.line, d.proc.column, f"{where} is @pipelined: its mirror has no outputs")
        if len(d.outputs) != len(reply):
            col = d.outputs[0].column if d.outputs else d.proc.column
            err(d.line, col, f"{where} answers {len(reply)} value(s) on success, the declaration "
                f"names {len(d.outputs)} output(s)")
        for out, (_path, kind) in zip(d.outputs, reply, strict=False):
            need = {"int": "integer", "float": "float", "CUuuid": "opaque16"}.get(out.text, "integer")
            if out.text not in OUTPUTS:
                err(d.line, out.column, f"unknown output '{out.text}'; known: {', '.join(OUTPUTS)}")
            elif kind != need:
                err(d.line, out.column, f"output '{out.text}' needs {need} data, {where} gives "
                    f"{kind}")
        if len(self.r.errors) > before:
            return None
        result_type = proc.result.type.name if proc.result.type else ""
        plan = self.plans.result_shape(proc.result) is not None
        method = "call" if plan and result_type not in _IDENTITY_RESULTS else "sync"
        scalars = [(p.text, c.text) for p, c in d.params if c.text in SCALARS]
        return Mirror(d, scalars, args, pipelined, method, [path for path, _ in reply])


def _handle_facts(proc: ir.ProcedureDef) -> list[tuple[int, tuple[str, ...]]]:
    return [(i, handle_kinds(f.arg)) for i, a in enumerate(proc.args) for f in a.facts
            if f.name == "handle"]


def _fits(xdr: str, wanted: tuple[str, ...]) -> str:
    if wanted:
        return "one of the conversions " + ", ".join(wanted)
    fits = [c for c, t in SCALARS.items() if t == xdr]
    fits += [c for c, (_e, t) in OBJECTS.items() if t == xdr and t != "cu_handle"]
    return "one of the conversions " + ", ".join(fits) if fits else f"no conversion ({xdr})"


def _wrap(out: str, value: str) -> str:
    if out == "int":
        return value
    if out == "float":
        return f"float({value})"
    if out == "CUuuid":
        return f"CUuuid(bytes({value}))"
    return f"{out}({value})"


def _render_mirror(m: Mirror) -> list[str]:
    d = m.decl
    sig = ", ".join(f"{p.text}: {'int' if c.text in SCALARS else 'Any'}" for p, c in d.params)
    outs = ", ".join(f"{o.text} | None" for o in d.outputs)
    ret = f"tuple[Any, {outs}]" if outs else "tuple[Any]"
    lines = [f"def {d.name}({sig}) -> {ret}:"]
    lines += [f'    {p} = {helper}({p}, "{d.name}: {p}")' for p, helper in m.scalars]
    args = "".join(f", {a}" for a in m.args)
    proc = f'"{d.proc.text}"{args}'
    nones = ", None" * len(d.outputs)
    if m.pipelined:
        lines += [f"    _conn().post({proc})", "    return (_SUCCESS,)"]
    elif not d.outputs:
        lines.append(f"    return _out(_conn().call({proc})[0])")
    elif m.method == "call":
        names = [f"v{i}" for i in range(len(d.outputs))]
        lines += [
            f"    err, {', '.join(names)} = _conn().call({proc})",
            "    if err:",
            f"        return _out(err{nones})",
            "    return (_SUCCESS, "
            + ", ".join(_wrap(o.text, n) for o, n in zip(d.outputs, names, strict=True)) + ")",
        ]
    else:
        lines += [
            f"    err, r = _conn().sync({proc})",
            "    if err:",
            f"        return _out(err{nones})",
            "    return (_SUCCESS, "
            + ", ".join(_wrap(o.text, f"r.{p}") for o, p in zip(d.outputs, m.fields, strict=True))
            + ")",
        ]
    return lines


def _import(module: str, names: list[str]) -> list[str]:
    """An import line as isort writes it (wrapped, one name a line, past 100 columns)."""
    if not names:
        return []
    line = f"from {module} import {', '.join(names)}"
    if len(line) <= 100:
        return [line]
    return [f"from {module} import (", *[f"    {n}," for n in names], ")"]


def render(mirrors: list[Mirror]) -> str:
    used = sorted({o.text for m in mirrors for o in m.decl.outputs if o.text != "int"
                   and o.text != "float"})
    scal = sorted({h for m in mirrors for _p, h in m.scalars})
    body: list[str] = []
    for m in mirrors:
        body += ["", "", *_render_mirror(m)]
    text = "\n".join(body)
    base = [n for n in ("_SUCCESS", "_conn", "_handle", "_name", "_out", "_stream")
            if re.search(rf"\b{n}\b", text)]
    needs_as_int = "as_int(" in text
    names = sorted(m.decl.name for m in mirrors)
    head = [
        f"# DO NOT EDIT: generated by {TOOL} from {DECLARATIONS} and {SPEC} (`make stubs`).",
        '"""The driver mirrors declared one line each in cricket_client/driver.mirrors:',
        "cuda.bindings.driver's names, arguments and return tuples, each sending its procedure of",
        "rpc_spec/cricket.x. cricket_client.driver exports them with the hand-written ones.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
    ]
    types = [*used, *(["as_int"] if needs_as_int else [])]
    for module, imported in (("._args", scal), ("._driver_base", base), ("._types", types)):
        head += _import(module, imported)
    head += ["", "__all__ = ["] + [f'    "{n}",' for n in names] + ["]"]
    return "\n".join(head + body) + "\n"


def _unique(reader: _Reader, decls: list[Decl]) -> list[Decl]:
    seen: dict[str, int] = {}
    out = []
    for d in decls:
        if d.name in seen:
            reader.error(d.line, d.column, f"{d.name} is declared twice (first on line "
                         f"{seen[d.name]})")
            continue
        seen[d.name] = d.line
        out.append(d)
    return out


def _raise(reader: _Reader) -> None:
    if reader.errors:
        raise DeclarationError("\n".join(text for *_at, text in sorted(reader.errors)))


def generate(root: Path = ROOT, declarations: str = DECLARATIONS) -> str:
    """The text of the generated driver module; DeclarationError names every mistake."""
    reader = _Reader(declarations, (root / declarations).read_text(encoding="utf-8"))
    decls = _unique(reader, reader.read())
    checker = _Checker(reader, _spec(root))
    mirrors = [m for m in map(checker.mirror, decls) if m is not None]
    _raise(reader)
    return render(mirrors)


# -- runtime mirrors: delegations to driver mirrors ---------------------------------------------

RUNTIME_DECLARATIONS = "cricket_client/runtime.mirrors"
RUNTIME_OUTPUT = "cricket_client/_runtime_generated.py"
RUNTIME_SCALARS = {**{c: c for c in SCALARS}, "byte": "c_int"}
RUNTIME_OBJECTS = {
    "any": "{p}",
    "as_int": "as_int({p})",
    "enum": "int({p})",
    "stream": "_stream({p})",
    "CUlibrary": "CUlibrary(as_int({p}))",
}
# The handle types of cricket_client.runtime_types (cudaStream_t, cudaEvent_t, ...).
RUNTIME_HANDLES = tuple(n for n in _constant("cricket_client/runtime_types.py", "__all__")
                        if n.startswith("cuda") and n.endswith("_t") and n != "cudaUUID_t")
RUNTIME_OUTPUTS = ("int", "float", *RUNTIME_HANDLES)


def _driver_functions(root: Path, declarations: str) -> dict[str, tuple[list[str], int]]:
    """Driver mirror -> (its parameters, its outputs): the declared ones, and those written by
    hand in cricket_client/driver.py and driver_*.py (read, not imported)."""
    import ast

    found: dict[str, tuple[list[str], int]] = {}
    for path in [root / "cricket_client" / "driver.py",
                 *sorted((root / "cricket_client").glob("driver_*.py")),
                 root / "cricket_client" / "capture_modes.py"]:
        if not path.exists():
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.FunctionDef) or not node.name.startswith("cu"):
                continue
            ret = node.returns
            outputs = -1
            if isinstance(ret, ast.Constant) and isinstance(ret.value, str):
                ret = ast.parse(ret.value, mode="eval").body
            if isinstance(ret, ast.Subscript):
                elts = ret.slice.elts if isinstance(ret.slice, ast.Tuple) else [ret.slice]
                outputs = len(elts) - 1
            found[node.name] = ([a.arg for a in node.args.args], outputs)
    reader = _Reader(declarations, (root / declarations).read_text(encoding="utf-8"))
    for d in reader.read():
        found[d.name] = ([p.text for p, _c in d.params], len(d.outputs))
    return found


def _runtime_mirror(r: _Reader, d: Decl, driver: dict[str, tuple[list[str], int]]) -> list[str]:
    """The code of one runtime mirror (empty after reporting an error)."""
    before = len(r.errors)
    if d.name not in RUNTIME_NAMES:
        close = difflib.get_close_matches(d.name, RUNTIME_NAMES, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        r.error(d.line, d.column, f"'{d.name}' is not a function of cuda.bindings.runtime{hint}")
    target = driver.get(d.proc.text)
    if target is None:
        close = difflib.get_close_matches(d.proc.text, list(driver), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        r.error(d.line, d.proc.column, f"no driver mirror '{d.proc.text}'{hint}")
        return []
    params = {p.text: c for p, c in d.params}
    for p, conv in d.params:
        if conv.text not in RUNTIME_SCALARS and conv.text not in RUNTIME_OBJECTS:
            r.error(d.line, conv.column, f"unknown conversion '{conv.text}' of '{p.text}'; "
                    "known: " + ", ".join([*RUNTIME_SCALARS, *RUNTIME_OBJECTS]))
    wire = d.wire or []
    target_params, target_outputs = target
    if len(wire) != len(target_params):
        col = wire[0].column if wire else d.proc.column
        r.error(d.line, col, f"{d.proc.text}({', '.join(target_params)}) takes "
                f"{len(target_params)} argument(s), the declaration gives {len(wire)}")
    args, sent = [], set()
    for item in wire:
        if re.fullmatch(r"-?\d+", item.text):
            args.append(item.text)
            continue
        conv = params.get(item.text)
        if conv is None:
            r.error(d.line, item.column, f"'{item.text}' is not a parameter of {d.name}")
            continue
        if item.text in sent:
            r.error(d.line, item.column, f"parameter '{item.text}' is sent twice")
        sent.add(item.text)
        expr = RUNTIME_OBJECTS.get(conv.text, "{p}")
        args.append(expr.format(p=item.text))
    for p, _c in d.params:
        if p.text not in sent:
            r.error(d.line, p.column, f"parameter '{p.text}' is not sent to {d.proc.text}")
    if target_outputs >= 0 and len(d.outputs) != target_outputs:
        col = d.outputs[0].column if d.outputs else d.proc.column
        r.error(d.line, col, f"{d.proc.text} gives {target_outputs} output(s), the declaration "
                f"names {len(d.outputs)}")
    for out in d.outputs:
        if out.text not in RUNTIME_OUTPUTS:
            r.error(d.line, out.column, f"unknown output '{out.text}'; known: "
                    + ", ".join(RUNTIME_OUTPUTS))
    if len(r.errors) > before:
        return []
    sig = ", ".join(f"{p.text}: {'int' if c.text in RUNTIME_SCALARS else 'Any'}"
                    for p, c in d.params)
    outs = ", ".join(f"{o.text} | None" for o in d.outputs)
    lines = [f"def {d.name}({sig}) -> {f'tuple[Any, {outs}]' if outs else 'tuple[Any]'}:"]
    for p, c in d.params:
        if c.text in RUNTIME_SCALARS:
            mask = " & 0xFF" if c.text == "byte" else ""
            lines.append(f'    {p.text} = {RUNTIME_SCALARS[c.text]}({p.text}, '
                         f'"{d.name}: {p.text}"){mask}')
    nones = ", None" * len(d.outputs)
    call = f"driver.{d.proc.text}({', '.join(args)})"
    lines += ["    err = _ready()[0]", "    if err:", f"        return _ret(err{nones})"]
    if not d.outputs:
        return [*lines, f"    return _ret({call}[0])"]
    names = [f"v{i}" for i in range(len(d.outputs))]
    wrapped = [n if o.text == "float" else f"as_int({n})" if o.text == "int"
               else f"{o.text}(as_int({n}))" for o, n in zip(d.outputs, names, strict=True)]
    return [*lines, f"    err, {', '.join(names)} = {call}", "    if err:",
            f"        return _ret(err{nones})", f"    return (_SUCCESS, {', '.join(wrapped)})"]


def generate_runtime(root: Path = ROOT, declarations: str = RUNTIME_DECLARATIONS,
                     driver_declarations: str = DECLARATIONS) -> str:
    """The text of the generated runtime module; DeclarationError names every mistake."""
    reader = _Reader(declarations, (root / declarations).read_text(encoding="utf-8"))
    decls = _unique(reader, reader.read())
    driver = _driver_functions(root, driver_declarations)
    bodies = [(d.name, _runtime_mirror(reader, d, driver)) for d in decls]
    _raise(reader)
    body: list[str] = []
    for _name, lines in bodies:
        body += ["", "", *lines]
    text = "\n".join(body)
    scal = sorted({RUNTIME_SCALARS[c.text] for d in decls for _p, c in d.params
                   if c.text in RUNTIME_SCALARS})
    base = [n for n in ("_SUCCESS", "_ready", "_ret", "_stream") if re.search(rf"\b{n}\b", text)]
    types = [n for n in ("CUlibrary", "as_int") if f"{n}(" in text]
    rtypes = sorted({o.text for d in decls for o in d.outputs if o.text in RUNTIME_HANDLES})
    head = [
        f"# DO NOT EDIT: generated by {TOOL} from {declarations} and the driver mirrors "
        "(`make stubs`).",
        '"""The runtime mirrors declared one line each in cricket_client/runtime.mirrors:',
        "cuda.bindings.runtime's names, arguments and return tuples, each making the runtime's",
        "context current and calling a driver mirror. cricket_client.runtime exports them with the",
        "hand-written ones.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        "from . import driver",
    ]
    for module, imported in (("._args", scal), ("._runtime_base", base), ("._types", types),
                             (".runtime_types", rtypes)):
        head += _import(module, imported)
    names = sorted(d.name for d in decls)
    head += ["", "__all__ = ["] + [f'    "{n}",' for n in names] + ["]"]
    return "\n".join(head + body) + "\n"


# -- native entries: the exported C functions that call the driver mirrors --------------------

NATIVE_DIR = "cricket_client/native"
NATIVE_OUTPUT = "cricket_client/native/_entries_generated.py"
# Modules whose top-level functions named as an exported symbol are its hand-written entry.
NATIVE_HAND = ("cricket_client/native/entries.py", "cricket_client/native/entries_families.py")
# Exported symbols whose cuda.bindings.driver function has another name than the symbol
# without its ABI suffix.
NATIVE_NAMES = {"cuGraphInstantiateWithFlags": "cuGraphInstantiate",
                "cuStreamGetCtx_v2": "cuStreamGetCtx_v2"}  # a function of its own, not an ABI


@dataclass
class NativeTables:
    """What cricket_client/native/signatures.py declares, read as plain data."""

    entries: list[tuple[str, list[tuple[str, str]]]]  # (exported symbol, [(C type, name)])
    where: dict[str, str]  # symbol -> "file:line" of its declaration
    optional: frozenset[str]  # symbols whose output pointers may be NULL
    structs: frozenset[str]  # struct types passed by pointer (read through a view)
    handles: frozenset[str]  # handle types (arrays of them are read as lists of integers)


def _native_tables(root: Path) -> NativeTables:
    """signatures.py and families.py are pure data: loaded from their files as a package of
    their own (cricket_client is not imported: its import needs the modules written here)."""
    import ast
    import importlib.util
    import types

    folder = root / NATIVE_DIR
    pkg = "_cricket_native_declarations"
    package = types.ModuleType(pkg)
    package.__path__ = [str(folder)]
    loaded = {pkg: package}
    saved = {name: sys.modules.get(name) for name in (pkg, *(f"{pkg}.{m}" for m in
             ("launch_pack", "families", "signatures")))}
    sys.modules[pkg] = package
    try:
        for name in ("launch_pack", "families", "signatures"):
            spec = importlib.util.spec_from_file_location(f"{pkg}.{name}", folder / f"{name}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            loaded[name] = module
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
    sig, fam = loaded["signatures"], loaded["families"]
    where: dict[str, str] = {}
    for path in (f"{NATIVE_DIR}/signatures.py", f"{NATIVE_DIR}/families.py"):
        for node in ast.walk(ast.parse((root / path).read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Tuple) and len(node.elts) == 2
                    and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                            for e in node.elts)):
                where.setdefault(node.elts[0].value, f"{path}:{node.lineno}")  # type: ignore[attr-defined]
    entries = [(symbol, sig._params(params)) for symbol, params in sig.ENTRIES]
    return NativeTables(entries, where, frozenset(sig.OPTIONAL_OUTPUTS),
                        frozenset(fam.STRUCTS), frozenset(sig.HANDLE_TYPES))


def _hand_entries(root: Path) -> set[str]:
    import ast

    names: set[str] = set()
    for path in NATIVE_HAND:
        for node in ast.parse((root / path).read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("cu"):
                names.add(node.name)
    return names


_PY_NAMES = frozenset(dir(builtins)) | {"err", "ffi", "driver"}  # kept apart from C names


def _native_entry(symbol: str, params: list[tuple[str, str]], mirror: str, target: tuple[list[str], int],
                  declared_outputs: list[str] | None, tables: NativeTables) -> list[str] | str:
    """The code of one generated entry, or why `symbol` needs a hand-written one."""
    import keyword

    checks: list[str] = []
    args: list[str] = []
    outs: list[tuple[str, str]] = []  # (C name, base type)
    struct_outs: list[tuple[int, str]] = []  # (argument index, C name) of non-const structs
    sig: list[str] = []
    for i, (ctype, cname) in enumerate(params):
        name = cname + "_" if keyword.iskeyword(cname) or cname in _PY_NAMES else cname
        base = ctype.replace("const ", "").rstrip("*")
        stars = ctype.count("*")
        count = params[i + 1][1] if i + 1 < len(params) and params[i + 1][0] == "size_t" else None
        if base in tables.handles and stars == 1 and ctype.startswith("const") and count:
            # an array of handles and its length (the next parameter): a list of integers
            checks.append(f"    if {count} and not {name}:\n        return _null(\"{symbol}\", \"{cname}\")")
            args.append(f"_handles({name}, {count})")
            sig.append(f"{name}: Any")
        elif base in tables.structs and stars == 1:
            # read through a view (a non-const one written back by the mirror, as cuda-python's
            # objects are), or, where the mirror answers it, an output struct filled in
            checks.append(f"    if not {name}:\n        return _null(\"{symbol}\", \"{cname}\")")
            if not ctype.startswith("const"):
                struct_outs.append((len(args), name))
            args.append(f"StructView({name})")
            sig.append(f"{name}: Any")
        elif ctype == "const char*":
            checks.append(f"    if not {name}:\n        return _null(\"{symbol}\", \"{cname}\")")
            args.append(f"ffi.string({name})")
            sig.append(f"{name}: Any")
        elif ctype == "CUfunction":
            args.append(f"_func({name})")
            sig.append(f"{name}: int")
        elif stars == 0 or base == "void":
            args.append(name)
            sig.append(f"{name}: int")
        elif stars == 1 and not ctype.startswith("const") and base != "char":
            outs.append((name, base))
            sig.append(f"{name}: Any")
        else:
            return f"parameter '{ctype} {cname}' has no generated conversion"
    target_params, target_outputs = target
    if struct_outs and len(args) - len(struct_outs) == len(target_params):
        for index, name in reversed(struct_outs):  # answered by the mirror: outputs
            del args[index]
            checks.remove(f"    if not {name}:\n        return _null(\"{symbol}\", \"{name.rstrip('_')}\")")
            outs.append((name, "struct"))
    if len(args) != len(target_params):
        return (f"{mirror}({', '.join(target_params)}) takes {len(target_params)} argument(s), "
                f"the C function gives {len(args)} input(s)")
    if target_outputs >= 0 and target_outputs != len(outs):
        return (f"{mirror} gives {target_outputs} output(s), the C function has {len(outs)} "
                "output pointer(s)")
    optional = symbol in tables.optional
    lines = ["", "", "@_entry", f"def {symbol}({', '.join(sig)}) -> int:"]
    if not optional:
        lines += [f"    if not {name}:\n        return _null(\"{symbol}\", \"{name.rstrip('_')}\")"
                  for name, _ in outs]
    lines += checks
    call = f"driver.{mirror}({', '.join(args)})"
    if not outs:
        return [*lines, f"    return int({call}[0])"]
    values = [f"v{i}" for i in range(len(outs))]
    lines.append(f"    err, {', '.join(values)} = {call}")
    writes = []
    for i, ((name, base), value) in enumerate(zip(outs, values, strict=True)):
        kind = declared_outputs[i] if declared_outputs else None
        if base == "struct":
            write = f"_write_struct({name}, {value})"
        elif base == "CUuuid":
            write = f"ffi.memmove({name}, _uuid({value}), 16)"
        elif base == "float" or kind == "int":
            write = f"{name}[0] = {value}"
        else:
            write = f"{name}[0] = _number({value})"
        writes.append(f"        if {name}:\n            {write}" if optional
                      else f"        {write}")
    if optional and len(outs) == 1:  # one condition, as ruff's SIM102 wants it
        name, write = outs[0][0], writes[0].split("\n")[1].strip()
        return [*lines, f"    if not err and {name}:", f"        {write}",
                "    return int(err)"]
    return [*lines, "    if not err:", *writes, "    return int(err)"]


def generate_native(root: Path = ROOT, declarations: str = DECLARATIONS) -> str:
    """The text of the generated native entries: every exported driver function of
    cricket_client/native/signatures.py without a hand-written entry calls its driver mirror
    (the generated or the hand-written one) and writes its output pointers. A function that
    does not fit is an error naming its declaration."""
    tables = _native_tables(root)
    hand = _hand_entries(root)
    driver = _driver_functions(root, declarations)
    reader = _Reader(declarations, (root / declarations).read_text(encoding="utf-8"))
    declared = {d.name: [o.text for o in d.outputs] for d in reader.read()}
    errors: list[str] = []
    body: list[str] = []
    names: list[str] = []
    for symbol, params in tables.entries:
        if symbol in hand:
            continue
        mirror = NATIVE_NAMES.get(symbol, re.sub(r"_v\d$", "", symbol))
        where = tables.where.get(symbol, f"{NATIVE_DIR}/signatures.py")
        target = driver.get(mirror)
        if target is None:
            errors.append(f"{where}: error: {symbol}: no driver mirror '{mirror}' (declare it in "
                          f"{declarations}, or write the entry by hand in {NATIVE_HAND[0]})")
            continue
        code = _native_entry(symbol, params, mirror, target, declared.get(mirror), tables)
        if isinstance(code, str):
            errors.append(f"{where}: error: {symbol}: {code} (write its entry by hand in "
                          f"{NATIVE_HAND[0]} or {NATIVE_HAND[1]})")
            continue
        body += code
        names.append(symbol)
    if errors:
        raise DeclarationError("\n".join(errors))
    text = "\n".join(body)
    used = [n for n in ("INVALID_VALUE", "_entry", "_func", "_null", "ffi") if re.search(rf"\b{n}\b", text)]
    families = [n for n in ("StructView", "_handles", "_number", "_uuid", "_write_struct") if re.search(rf"\b{n}\b", text)]
    head = [
        f"# DO NOT EDIT: generated by {TOOL} from {NATIVE_DIR}/signatures.py, {declarations} and the "
        "hand-written driver mirrors (`make stubs`).",
        '"""The native library\'s entries that need nothing of their own: each converts its C',
        "arguments (handles and host pointers arrive as integers, structs are read through a view,",
        "arrays of handles as lists, C strings as bytes), calls the driver mirror of",
        "cricket_client.driver (the same function a Python caller gets: same checks, pipelining,",
        "capture modes, known answers) and writes its output pointers. The entries that need more",
        "are written by hand in entries.py and entries_families.py (docs/internals.md says why).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        "from .. import driver",
    ]
    head += _import(".entries", used) + _import(".entries_families", families)
    head += ["", "__all__ = ["] + [f'    "{n}",' for n in sorted(names)] + ["]"]
    return "\n".join(head) + "\n" + text + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when a generated module differs from what would be generated")
    args = ap.parse_args(argv)
    try:
        texts = {OUTPUT: generate(), RUNTIME_OUTPUT: generate_runtime(),
                 NATIVE_OUTPUT: generate_native()}
    except DeclarationError as e:
        print(e, file=sys.stderr)
        return 2
    stale = 0
    for output, text in texts.items():
        out = ROOT / output
        if args.check:
            current = out.read_text(encoding="utf-8") if out.exists() else ""
            if current != text:
                print(f"{output} is stale: run `make stubs` (python {TOOL})", file=sys.stderr)
                stale = 1
        else:
            out.write_text(text, encoding="utf-8")
    return stale


if __name__ == "__main__":
    sys.exit(main())
