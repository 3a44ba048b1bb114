"""Intermediate representation of a parsed .x file: plain dataclasses with positions.

The checker fills the ``resolved`` integers of values; the emitter reads only this.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "BUILTIN_TYPES",
    "ConstDef",
    "Declaration",
    "Definition",
    "EnumDef",
    "EnumItem",
    "Fact",
    "Pos",
    "ProcedureDef",
    "ProgramDef",
    "Spec",
    "StructDef",
    "TypeSpec",
    "TypedefDef",
    "UnionArm",
    "UnionDef",
    "Value",
    "VersionDef",
]

BUILTIN_TYPES = (
    "int",
    "unsigned int",
    "hyper",
    "unsigned hyper",
    "float",
    "double",
    "bool",
    "quadruple",
)


@dataclass(frozen=True)
class Pos:
    """1-based line and column in the source."""

    line: int
    column: int


@dataclass
class Value:
    """A constant as written: a number literal (``text``) or a constant's name."""

    text: str
    pos: Pos
    name: str | None = None  # set when the value names a constant
    resolved: int | None = None  # filled by the checker


@dataclass
class TypeSpec:
    """A type name: one of BUILTIN_TYPES (``builtin``) or a declared type."""

    name: str
    pos: Pos
    builtin: bool


@dataclass(frozen=True)
class Fact:
    """One ``@name`` or ``@name(arg)`` of a facts comment (cricket_xdr.compiler.facts).

    ``name`` is None for text in the comment that is not a fact (reported by the checker).
    """

    name: str | None
    arg: str | None
    pos: Pos
    text: str


@dataclass
class Declaration:
    """``type name``, ``type name[n]``, ``type name<m>``, ``opaque``, ``string``, ``type *name``, ``void``.

    kind: plain, fixed_array, var_array, fixed_opaque, var_opaque, string, optional, void.
    """

    kind: str
    name: str | None
    pos: Pos
    type: TypeSpec | None = None
    size: Value | None = None  # the n of [n] or the m of <m>; None for <>
    facts: list[Fact] = field(default_factory=list)  # procedure arguments only


@dataclass
class ConstDef:
    name: str
    value: Value
    pos: Pos


@dataclass
class TypedefDef:
    decl: Declaration
    pos: Pos

    @property
    def name(self) -> str:
        return self.decl.name or ""


@dataclass
class EnumItem:
    name: str
    value: Value | None  # None: previous value + 1, as in C
    pos: Pos
    resolved: int | None = None


@dataclass
class EnumDef:
    name: str
    items: list[EnumItem]
    pos: Pos


@dataclass
class StructDef:
    name: str
    fields: list[Declaration]
    pos: Pos


@dataclass
class UnionArm:
    cases: list[Value]
    decl: Declaration


@dataclass
class UnionDef:
    name: str
    discriminant: Declaration
    arms: list[UnionArm]
    default: Declaration | None
    pos: Pos


@dataclass
class ProcedureDef:
    name: str
    result: Declaration  # kind plain, optional, string or void
    args: list[Declaration]  # kind plain, optional or string; empty for void
    number: Value
    pos: Pos
    facts: list[Fact] = field(default_factory=list)


@dataclass
class VersionDef:
    name: str
    procedures: list[ProcedureDef]
    number: Value
    pos: Pos


@dataclass
class ProgramDef:
    name: str
    versions: list[VersionDef]
    number: Value
    pos: Pos


Definition = ConstDef | TypedefDef | EnumDef | StructDef | UnionDef | ProgramDef


@dataclass
class Spec:
    """A whole .x file."""

    path: str
    source: str
    definitions: list[Definition] = field(default_factory=list)
