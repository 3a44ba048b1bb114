"""Stage 2: semantic checks of a parsed spec; resolves every constant to an int.

Errors (all reported together, each at its line and column): duplicate names, undefined or
misused names, duplicate enum or case values, case values outside the discriminant's type,
bad bounds, ``quadruple``, misplaced ``void``, duplicate version/procedure numbers, unknown,
misplaced, repeated or conflicting facts (cricket_xdr.compiler.facts).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from cricket_xdr.compiler import facts as vocab
from cricket_xdr.compiler import ir
from cricket_xdr.compiler.errors import Diagnostic, XdrgenError

__all__ = ["Model", "check"]

INT32 = (-(2**31), 2**31 - 1)
UINT32 = (0, 2**32 - 1)
# Names every rpcgen .x may use as values (they come from the C headers).
PREDEFINED = {"TRUE": 1, "FALSE": 0}
_DISCRIMINANTS = ("int", "unsigned int", "bool")

TypeDef = ir.TypedefDef | ir.EnumDef | ir.StructDef | ir.UnionDef


@dataclass
class Model:
    """A checked spec: the IR plus name tables the emitter needs."""

    spec: ir.Spec
    constants: dict[str, int] = field(default_factory=dict)  # const, enum member, RPC numbers
    types: dict[str, TypeDef] = field(default_factory=dict)
    enum_of_member: dict[str, ir.EnumDef] = field(default_factory=dict)

    def underlying(self, spec: ir.TypeSpec) -> ir.TypeSpec | TypeDef | None:
        """Follow plain typedefs: a builtin TypeSpec, an enum/struct/union, or a non-plain typedef."""
        seen: set[str] = set()
        while not spec.builtin:
            d = self.types.get(spec.name)
            if d is None or spec.name in seen:
                return None
            seen.add(spec.name)
            if isinstance(d, ir.TypedefDef) and d.decl.kind == "plain" and d.decl.type:
                spec = d.decl.type
                continue
            return d
        return spec


class _Checker:
    def __init__(self, spec: ir.Spec) -> None:
        self.model = Model(spec)
        self.errors: list[Diagnostic] = []
        self.lines = spec.source.splitlines()
        self.first: dict[str, ir.Pos] = {}
        self.const_defs: dict[str, ir.ConstDef] = {}
        self.resolving: set[str] = set()

    def error(self, pos: ir.Pos, message: str) -> None:
        src = self.lines[pos.line - 1] if 0 < pos.line <= len(self.lines) else ""
        self.errors.append(Diagnostic(self.model.spec.path, pos.line, pos.column, message, src))

    def declare(self, name: str, pos: ir.Pos) -> bool:
        if name in self.first:
            f = self.first[name]
            self.error(pos, f"duplicate name '{name}' (first defined at {f.line}:{f.column})")
            return False
        self.first[name] = pos
        return True

    # constants
    def literal(self, value: ir.Value) -> int | None:
        text = value.text
        sign = -1 if text.startswith("-") else 1
        digits = text.lstrip("-")
        try:
            if digits[:2] in ("0x", "0X"):
                return sign * int(digits[2:], 16)
            if len(digits) > 1 and digits.startswith("0"):
                return sign * int(digits[1:], 8)
            return sign * int(digits, 10)
        except ValueError:
            self.error(value.pos, f"invalid number '{text}'")
            return None

    def resolve(self, value: ir.Value) -> int | None:
        if value.resolved is not None:
            return value.resolved
        if value.name is None:
            value.resolved = self.literal(value)
            return value.resolved
        name = value.name
        if name in self.const_defs and name not in self.model.constants:
            if name in self.resolving:
                self.error(value.pos, f"constant '{name}' is defined in terms of itself")
                return None
            self.resolving.add(name)
            self.const_value(self.const_defs[name])
            self.resolving.discard(name)
        if name in self.model.constants:
            value.resolved = self.model.constants[name]
        elif name in PREDEFINED:
            value.resolved = PREDEFINED[name]
        elif name in self.model.types:
            self.error(value.pos, f"'{name}' is a type, not a constant")
        else:
            self.error(value.pos, f"undefined constant '{name}'")
        return value.resolved

    def const_value(self, c: ir.ConstDef) -> None:
        v = self.resolve(c.value)
        if v is not None:
            self.model.constants[c.name] = v

    def bound(self, value: ir.Value | None, what: str) -> None:
        if value is None:
            return
        v = self.resolve(value)
        if v is not None and not 0 <= v <= UINT32[1]:
            self.error(value.pos, f"{what} must be a non-negative constant, got {v}")

    # types
    def type_ref(self, spec: ir.TypeSpec) -> None:
        if spec.builtin:
            if spec.name == "quadruple":
                self.error(spec.pos, "type 'quadruple' is not supported (no 128-bit float in Python)")
            return
        if spec.name not in self.model.types:
            if spec.name in self.model.constants or spec.name in self.const_defs:
                self.error(spec.pos, f"'{spec.name}' is a constant, not a type")
            else:
                self.error(spec.pos, f"undefined type '{spec.name}'")

    def decl(self, d: ir.Declaration, where: str, void_ok: bool = False) -> None:
        if d.kind == "void":
            if not void_ok:
                self.error(d.pos, f"void is only allowed as a union arm or a procedure result, not {where}")
            return
        if d.type is not None:
            self.type_ref(d.type)
        what = {"fixed_array": "array size", "var_array": "array bound",
                "fixed_opaque": "opaque size", "var_opaque": "opaque bound",
                "string": "string bound"}.get(d.kind, "size")
        self.bound(d.size, f"{what} of '{d.name}'" if d.name else what)

    def fields(self, decls: list[ir.Declaration], where: str) -> None:
        seen: set[str] = set()
        for d in decls:
            if d.name is not None:
                if d.name in seen:
                    self.error(d.pos, f"duplicate field '{d.name}' in {where}")
                seen.add(d.name)

    def enum(self, e: ir.EnumDef) -> None:
        values: dict[int, str] = {}
        nxt = 0
        for item in e.items:
            v = self.resolve(item.value) if item.value is not None else nxt
            if v is None:
                continue
            if not INT32[0] <= v <= INT32[1]:
                self.error(item.pos, f"enum {e.name}: value {v} of '{item.name}' is not a 32-bit int")
            if v in values:
                self.error(item.pos, f"duplicate enum value {v} in enum {e.name} "
                                     f"('{item.name}' and '{values[v]}')")
            values[v] = item.name
            item.resolved = v
            nxt = v + 1
            if item.name in self.first and self.first[item.name] == item.pos:
                self.model.constants[item.name] = v

    def union(self, u: ir.UnionDef) -> None:
        d = u.discriminant
        self.decl(d, "a discriminant")
        base = self.model.underlying(d.type) if d.kind == "plain" and d.type else None
        if d.kind == "plain" and d.type and (d.type.builtin or d.type.name in self.model.types):
            ok = isinstance(base, ir.EnumDef) or (
                isinstance(base, ir.TypeSpec) and base.name in _DISCRIMINANTS)
            if not ok:
                self.error(d.pos, f"union {u.name}: discriminant '{d.name}' must be int, unsigned "
                                  f"int, bool or an enum, not '{d.type.name}'")
                base = None
        elif d.kind != "plain":
            self.error(d.pos, f"union {u.name}: the discriminant must be a single value")
        seen: dict[int, ir.Value] = {}
        names: set[str] = set()
        for arm in u.arms:
            for case in arm.cases:
                v = self.resolve(case)
                if v is None:
                    continue
                self.case_type(u, case, v, base)
                if v in seen:
                    p = seen[v].pos
                    self.error(case.pos, f"union {u.name}: duplicate case value {v} "
                                         f"(first at {p.line}:{p.column})")
                seen[v] = case
            self.decl(arm.decl, "a union arm", void_ok=True)
        if u.default is not None:
            self.decl(u.default, "a union arm", void_ok=True)
        for a in [arm.decl for arm in u.arms] + ([u.default] if u.default else []):
            if a.name is None:
                continue
            if a.name in names or a.name == d.name:
                self.error(a.pos, f"duplicate field '{a.name}' in union {u.name}")
            names.add(a.name)
        if d.name == "value":
            self.error(d.pos, f"union {u.name}: the discriminant may not be named 'value' "
                              "(the arm's value is held in a field of that name)")

    def case_type(self, u: ir.UnionDef, case: ir.Value, v: int, base: object) -> None:
        if isinstance(base, ir.EnumDef):
            if v not in {i.resolved for i in base.items}:
                self.error(case.pos, f"union {u.name}: case {case.text} is not a value of enum "
                                     f"{base.name}")
            elif case.name is not None and case.name in self.model.enum_of_member and \
                    self.model.enum_of_member[case.name] is not base:
                self.error(case.pos, f"union {u.name}: case {case.name} is a value of enum "
                                     f"{self.model.enum_of_member[case.name].name}, not {base.name}")
        elif isinstance(base, ir.TypeSpec):
            lo, hi = {"int": INT32, "unsigned int": UINT32, "bool": (0, 1)}[base.name]
            if not lo <= v <= hi:
                self.error(case.pos, f"union {u.name}: case {case.text} ({v}) is not a value of "
                                     f"type {base.name}")

    def program(self, p: ir.ProgramDef) -> None:
        prog = self.resolve(p.number)
        if prog is not None:
            self.model.constants[p.name] = prog
        versions: dict[int, str] = {}
        for v in p.versions:
            vers = self.resolve(v.number)
            self.rpc_name(v.name, v.pos, vers)
            if vers is not None:
                if vers in versions:
                    self.error(v.number.pos, f"program {p.name}: version number {vers} of "
                                             f"{v.name} is also that of {versions[vers]}")
                versions[vers] = v.name
            procs: dict[int, str] = {}
            for proc in v.procedures:
                num = self.resolve(proc.number)
                self.rpc_name(proc.name, proc.pos, num)
                if num is not None:
                    if num in procs:
                        self.error(proc.number.pos, f"procedure number {num} duplicated in "
                                                    f"version {v.name} ({procs[num]} and {proc.name})")
                    procs[num] = proc.name
                self.decl(proc.result, "a result", void_ok=True)
                names: set[str] = set()
                for i, arg in enumerate(proc.args, 1):
                    self.decl(arg, f"an argument of {proc.name}")
                    if arg.name is not None:
                        if arg.name in names:
                            self.error(arg.pos, f"duplicate argument '{arg.name}' of {proc.name}")
                        names.add(arg.name)
                    self.arg_facts(proc, i, arg)
                self.proc_facts(proc)
            if any(proc.facts or any(a.facts for a in proc.args) for proc in v.procedures):
                for proc in v.procedures:
                    if not any(f.name in vocab.REPLAY_CLASSES for f in proc.facts):
                        self.error(proc.pos, f"procedure {proc.name} states no replay class "
                                             f"(version {v.name} states facts): add one of "
                                             + ", ".join(f"@{c}" for c in vocab.REPLAY_CLASSES))

    # facts
    def known_fact(self, fact: ir.Fact, where: str, known: dict[str, str],
                   other: dict[str, str]) -> bool:
        """Whether ``fact`` is one of ``known``; reports it otherwise."""
        if fact.name is None or fact.name == "":
            self.error(fact.pos, f"expected a fact like '@{next(iter(known))}' in the facts of "
                                 f"{where}, found '{fact.text}' (a ';' ends the facts)")
            return False
        if fact.name in known:
            return True
        if fact.name in other:
            self.error(fact.pos, f"fact '@{fact.name}' belongs on "
                                 f"{'an argument' if where.startswith('procedure') else 'a procedure'}, "
                                 f"not on {where}")
            return False
        close = difflib.get_close_matches(fact.name, [*known, *other], n=1)
        hint = f" (did you mean '@{close[0]}'?)" if close else ""
        self.error(fact.pos, f"unknown fact '@{fact.name}' of {where}{hint}; known: "
                             + ", ".join(f"@{k}" for k in known))
        return False

    def no_repeats(self, facts: list[ir.Fact], where: str) -> None:
        seen: dict[str, ir.Fact] = {}
        for f in facts:
            if f.name and f.name in seen:
                p = seen[f.name].pos
                self.error(f.pos, f"fact '@{f.name}' of {where} is stated twice "
                                  f"(first at {p.line}:{p.column})")
            elif f.name:
                seen[f.name] = f

    def proc_facts(self, proc: ir.ProcedureDef) -> None:
        where = f"procedure {proc.name}"
        if proc.facts and proc.facts[0].pos.line != proc.number.pos.line:
            self.error(proc.facts[0].pos, f"the facts of {proc.name} must follow it on the "
                                          "same line")
        known = [f for f in proc.facts
                 if self.known_fact(f, where, vocab.PROCEDURE_FACTS, vocab.ARGUMENT_FACTS)]
        self.no_repeats(known, where)
        for f in known:
            if f.arg is not None:
                self.error(f.pos, f"fact '@{f.name}' of {where} takes no argument")
        classes = [f for f in known if f.name in vocab.REPLAY_CLASSES]
        if len({f.name for f in classes}) > 1:
            first = classes[0]
            other = next(f for f in classes if f.name != first.name)
            self.error(other.pos, f"procedure {proc.name} is already '@{first.name}' "
                                  f"(at {first.pos.line}:{first.pos.column}); '@{other.name}' "
                                  "contradicts it")

    def arg_facts(self, proc: ir.ProcedureDef, index: int, arg: ir.Declaration) -> None:
        where = f"argument {index} of {proc.name}"
        known = [f for f in arg.facts
                 if self.known_fact(f, where, vocab.ARGUMENT_FACTS, vocab.PROCEDURE_FACTS)]
        self.no_repeats(known, where)
        base = self.model.underlying(arg.type) if arg.type is not None else None
        for f in known:
            if f.name == "view":
                if f.arg is not None:
                    self.error(f.pos, f"fact '@view' of {where} takes no argument")
                target = base.decl if isinstance(base, ir.TypedefDef) else arg
                if target.kind not in ("var_opaque", "fixed_opaque"):
                    self.error(f.pos, f"fact '@view' needs opaque data; {where} is not opaque")
            elif f.name == "handle":
                kinds = vocab.handle_kinds(f.arg)
                bad = [k for k in kinds if k not in vocab.HANDLE_KINDS]
                if not kinds or bad:
                    said = f"kind '{bad[0]}'" if bad else "no kind"
                    self.error(f.pos, f"fact '@handle' of {where} names {said}; write "
                                      "@handle(KIND) or @handle(KIND, KIND), KIND one of "
                                      + ", ".join(vocab.HANDLE_KINDS))
                if not (arg.kind == "plain" and isinstance(base, ir.TypeSpec) and
                        base.name in ("int", "unsigned int", "hyper", "unsigned hyper")):
                    self.error(f.pos, f"fact '@handle' needs an integer; {where} is not one")

    def rpc_name(self, name: str, pos: ir.Pos, number: int | None) -> None:
        """Version and procedure names are constants; a repeat must have the same number."""
        if name in self.model.constants and name not in self.const_defs and \
                name not in self.model.enum_of_member and name not in self.model.types:
            if number is not None and self.model.constants[name] != number:
                self.error(pos, f"'{name}' is defined again with a different number ({number}, "
                                f"before {self.model.constants[name]})")
            return
        if self.declare(name, pos) and number is not None:
            self.model.constants[name] = number

    def typedef_cycles(self) -> None:
        for d in self.model.spec.definitions:
            if isinstance(d, ir.TypedefDef) and d.decl.kind == "plain" and d.decl.type and \
                    not d.decl.type.builtin and d.name in self.model.types and \
                    self.model.underlying(d.decl.type) is None and \
                    d.decl.type.name in self.model.types:
                self.error(d.pos, f"typedef '{d.name}' refers to itself")

    def contained_struct(self, d: ir.Declaration) -> str | None:
        """The struct a plain or fixed-array declaration holds by value, through typedefs."""
        seen: set[str] = set()
        while d.kind in ("plain", "fixed_array") and d.type is not None and not d.type.builtin:
            name = d.type.name
            target = self.model.types.get(name)
            if isinstance(target, ir.StructDef):
                return name
            if not isinstance(target, ir.TypedefDef) or name in seen:
                return None
            seen.add(name)
            d = target.decl
        return None

    def infinite_structs(self) -> None:
        """A struct that holds itself by value (not through * or <>) has no finite encoding."""
        structs = {d.name: d for d in self.model.spec.definitions if isinstance(d, ir.StructDef)}
        for start in structs.values():
            stack: list[tuple[str, list[str]]] = [(start.name, [])]  # (struct, fields followed)
            visited: set[str] = set()
            while stack:
                name, path = stack.pop()
                for f in structs[name].fields:
                    inner = self.contained_struct(f)
                    if inner is None:
                        continue
                    if inner == start.name:
                        via = ".".join([*path, f.name or ""])
                        self.error(start.pos, f"struct {start.name} contains itself by value "
                                              f"(through {via}); make a field optional (*)")
                        stack.clear()
                        break
                    if inner not in visited and inner in structs:
                        visited.add(inner)
                        stack.append((inner, [*path, f.name or ""]))

    def run(self) -> Model:
        defs = self.model.spec.definitions
        # Pass 1: names.
        for d in defs:
            if isinstance(d, ir.ConstDef):
                if self.declare(d.name, d.pos):
                    self.const_defs[d.name] = d
            elif isinstance(d, ir.TypedefDef | ir.EnumDef | ir.StructDef | ir.UnionDef):
                if not d.name:
                    self.error(d.pos, "typedef of void")
                    continue
                if self.declare(d.name, d.decl.pos if isinstance(d, ir.TypedefDef) else d.pos):
                    self.model.types[d.name] = d
                if isinstance(d, ir.EnumDef):
                    for item in d.items:
                        if self.declare(item.name, item.pos):
                            self.model.enum_of_member[item.name] = d
            elif isinstance(d, ir.ProgramDef):
                self.declare(d.name, d.pos)
        # Pass 2: values and types, in source order.
        for d in defs:
            if isinstance(d, ir.ConstDef):
                if d.name not in self.model.constants:
                    self.const_value(d)
            elif isinstance(d, ir.EnumDef):
                self.enum(d)
        for d in defs:
            if isinstance(d, ir.TypedefDef):
                self.decl(d.decl, "a typedef")
            elif isinstance(d, ir.StructDef):
                self.fields(d.fields, f"struct {d.name}")
                for f in d.fields:
                    self.decl(f, f"a field of struct {d.name}")
            elif isinstance(d, ir.UnionDef):
                self.union(d)
            elif isinstance(d, ir.ProgramDef):
                self.program(d)
        self.typedef_cycles()
        self.infinite_structs()
        if self.errors:
            self.errors.sort(key=lambda e: (e.line, e.column))
            raise XdrgenError(self.errors)
        return self.model


def check(spec: ir.Spec) -> Model:
    """Check ``spec`` and resolve its constants; raise :class:`XdrgenError` on any error."""
    return _Checker(spec).run()
