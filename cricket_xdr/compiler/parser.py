"""Stage 1: source text -> :class:`~cricket_xdr.compiler.ir.Spec` with lark (LALR)."""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any

import lark
from lark import Token, Transformer

from cricket_xdr.compiler import ir
from cricket_xdr.compiler.errors import Diagnostic, XdrgenError

__all__ = ["parse"]

# How terminals are named in "expected one of" lists.
_TERMINAL_WORDS = {"IDENT": "identifier", "NUMBER": "number", "$END": "end of file"}


@functools.cache
def _parser() -> lark.Lark:
    grammar = resources.files("cricket_xdr.compiler").joinpath("grammar.lark").read_text()
    return lark.Lark(grammar, parser="lalr", lexer="basic", maybe_placeholders=False)


def _pos(item: Token) -> ir.Pos:
    return ir.Pos(item.line or 0, item.column or 0)


def _value(tok: Token) -> ir.Value:
    if tok.type == "IDENT":
        return ir.Value(str(tok), _pos(tok), name=str(tok))
    return ir.Value(str(tok), _pos(tok))


# One piece of a facts comment: blanks, a fact, or text that is not one.
_FACT_PIECE = re.compile(r"\s+|@(?P<name>\w*)(?:\((?P<arg>[^()]*)\))?|(?P<junk>[^\s@]+)")


def _facts(tok: Token) -> list[ir.Fact]:
    """The facts of a FACTS comment, each at its own line and column; a ``;`` ends them
    (free text may follow)."""
    text = str(tok)
    body_end = len(text) - 2
    semi = text.find(";", 2, body_end)
    end = body_end if semi < 0 else semi
    facts: list[ir.Fact] = []
    at = 2
    while at < end:
        m = _FACT_PIECE.match(text, at, end)
        assert m is not None  # the pattern matches any character
        at = m.end()
        if m.group().isspace():
            continue
        before = text[: m.start()]
        nl = before.rfind("\n")
        line = (tok.line or 0) + before.count("\n")
        column = (tok.column or 0) + m.start() if nl < 0 else m.start() - nl
        pos = ir.Pos(line, column)
        if m.group("junk") is not None:
            facts.append(ir.Fact(None, None, pos, m.group()))
        else:
            arg = m.group("arg")
            facts.append(ir.Fact(m.group("name"), None if arg is None else arg.strip(), pos,
                                 m.group()))
    return facts


def _split_facts(items: list[Any]) -> tuple[list[Any], list[ir.Fact]]:
    """(the items before a trailing FACTS token, its facts)."""
    if items and isinstance(items[-1], Token) and items[-1].type == "FACTS":
        return items[:-1], _facts(items[-1])
    return items, []


_UNSIGNED = {"int": "unsigned int", "long": "unsigned int", "short": "unsigned int",
             "char": "unsigned int", "hyper": "unsigned hyper"}
_SIGNED = {"long": "int", "short": "int", "char": "int"}


class _ToIR(Transformer[Token, Any]):
    """Builds IR nodes bottom-up; every node keeps the position of its first token."""

    def start(self, items: list[Any]) -> list[Any]:
        return items

    def value(self, items: list[Token]) -> ir.Value:
        return _value(items[0])

    # types
    def t_unsigned(self, items: list[Token]) -> ir.TypeSpec:
        name = _UNSIGNED[str(items[1])] if len(items) > 1 else "unsigned int"
        return ir.TypeSpec(name, _pos(items[0]), builtin=True)

    def t_builtin(self, items: list[Token]) -> ir.TypeSpec:
        word = str(items[0])
        return ir.TypeSpec(_SIGNED.get(word, word), _pos(items[0]), builtin=True)

    def t_named(self, items: list[Token]) -> ir.TypeSpec:
        return ir.TypeSpec(str(items[0]), _pos(items[0]), builtin=False)

    # declarations
    def decl_plain(self, items: list[Any]) -> ir.Declaration:
        return ir.Declaration("plain", str(items[1]), _pos(items[1]), items[0])

    def decl_fixed_array(self, items: list[Any]) -> ir.Declaration:
        return ir.Declaration("fixed_array", str(items[1]), _pos(items[1]), items[0], items[2])

    def decl_var_array(self, items: list[Any]) -> ir.Declaration:
        size = items[2] if len(items) > 2 else None
        return ir.Declaration("var_array", str(items[1]), _pos(items[1]), items[0], size)

    def decl_fixed_opaque(self, items: list[Any]) -> ir.Declaration:
        return ir.Declaration("fixed_opaque", str(items[1]), _pos(items[1]), None, items[2])

    def decl_var_opaque(self, items: list[Any]) -> ir.Declaration:
        size = items[2] if len(items) > 2 else None
        return ir.Declaration("var_opaque", str(items[1]), _pos(items[1]), None, size)

    def decl_string(self, items: list[Any]) -> ir.Declaration:
        size = items[2] if len(items) > 2 else None
        return ir.Declaration("string", str(items[1]), _pos(items[1]), None, size)

    def decl_optional(self, items: list[Any]) -> ir.Declaration:
        return ir.Declaration("optional", str(items[1]), _pos(items[1]), items[0])

    def decl_void(self, items: list[Token]) -> ir.Declaration:
        return ir.Declaration("void", None, _pos(items[0]))

    # definitions
    def const_def(self, items: list[Any]) -> ir.ConstDef:
        return ir.ConstDef(str(items[0]), items[1], _pos(items[0]))

    def typedef_def(self, items: list[Any]) -> ir.TypedefDef:
        return ir.TypedefDef(items[0], items[0].pos)

    def enum_item(self, items: list[Any]) -> ir.EnumItem:
        return ir.EnumItem(str(items[0]), items[1] if len(items) > 1 else None, _pos(items[0]))

    def enum_body(self, items: list[ir.EnumItem]) -> list[ir.EnumItem]:
        return items

    def enum_def(self, items: list[Any]) -> ir.EnumDef:
        return ir.EnumDef(str(items[0]), items[1], _pos(items[0]))

    def struct_body(self, items: list[ir.Declaration]) -> list[ir.Declaration]:
        return items

    def struct_def(self, items: list[Any]) -> ir.StructDef:
        return ir.StructDef(str(items[0]), items[1], _pos(items[0]))

    def case_label(self, items: list[ir.Value]) -> ir.Value:
        return items[0]

    def case_arm(self, items: list[Any]) -> ir.UnionArm:
        return ir.UnionArm(items[:-1], items[-1])

    def default_arm(self, items: list[ir.Declaration]) -> ir.Declaration:
        return items[0]

    def union_body(self, items: list[Any]) -> tuple[Any, ...]:
        disc, rest = items[0], items[1:]
        default = rest.pop() if rest and isinstance(rest[-1], ir.Declaration) else None
        return disc, rest, default

    def union_def(self, items: list[Any]) -> ir.UnionDef:
        disc, arms, default = items[1]
        return ir.UnionDef(str(items[0]), disc, arms, default, _pos(items[0]))

    # programs
    def proc_result(self, items: list[Any]) -> ir.Declaration:
        first = items[0]
        if isinstance(first, Token) and first.type == "VOID":
            return ir.Declaration("void", None, _pos(first))
        if isinstance(first, Token) and first.type == "STRING":
            return ir.Declaration("string", None, _pos(first))
        kind = "optional" if len(items) > 1 else "plain"
        return ir.Declaration(kind, None, first.pos, first)

    def arg_plain(self, items: list[Any]) -> ir.Declaration:
        items, facts = _split_facts(items)
        name = str(items[1]) if len(items) > 1 else None
        return ir.Declaration("plain", name, items[0].pos, items[0], facts=facts)

    def arg_optional(self, items: list[Any]) -> ir.Declaration:
        items, facts = _split_facts(items)
        name = str(items[1]) if len(items) > 1 else None
        return ir.Declaration("optional", name, items[0].pos, items[0], facts=facts)

    def arg_string(self, items: list[Any]) -> ir.Declaration:
        items, facts = _split_facts(items)
        name = next((str(t) for t in items[1:] if isinstance(t, Token)), None)
        size = next((v for v in items[1:] if isinstance(v, ir.Value)), None)
        return ir.Declaration("string", name, _pos(items[0]), None, size, facts=facts)

    def args_void(self, items: list[Token]) -> list[ir.Declaration]:
        return []

    def args(self, items: list[ir.Declaration]) -> list[ir.Declaration]:
        return items

    def procedure_def(self, items: list[Any]) -> ir.ProcedureDef:
        items, facts = _split_facts(items)
        result, name, *rest = items
        args = rest[0] if len(rest) == 2 else []
        return ir.ProcedureDef(str(name), result, args, rest[-1], _pos(name), facts)

    def version_def(self, items: list[Any]) -> ir.VersionDef:
        return ir.VersionDef(str(items[0]), items[1:-1], items[-1], _pos(items[0]))

    def program_def(self, items: list[Any]) -> ir.ProgramDef:
        return ir.ProgramDef(str(items[0]), items[1:-1], items[-1], _pos(items[0]))


def _describe(name: str, parser: lark.Lark) -> str:
    if name in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[name]
    for term in parser.terminals:
        if term.name == name and isinstance(term.pattern, lark.lexer.PatternStr):
            return f"'{term.pattern.value}'"
    return name.lower()


def _accepted_after(prefix: str) -> set[str]:
    """The terminals the parser accepts after ``prefix`` (empty if that cannot be told)."""
    try:
        ip = _parser().parse_interactive(prefix)
        ip.exhaust_lexer()
        return {t for t in ip.accepts() if t != "$END"}
    except lark.exceptions.LarkError:
        return set()


def _syntax_error(path: str, source: str, err: lark.exceptions.LarkError) -> XdrgenError:
    parser = _parser()
    lines = source.splitlines()
    line = getattr(err, "line", 0) or 0
    column = getattr(err, "column", 0) or 0
    expected: set[str] = set()
    if isinstance(err, lark.exceptions.UnexpectedToken):
        tok = err.token
        text = "end of file" if tok.type == "$END" else f"'{tok}'"
        if tok.type == "FACTS":
            src = lines[line - 1] if 0 < line <= len(lines) else ""
            msg = (f"facts comment {text} here: facts follow a procedure (on its line) or one "
                   "of its arguments (start the comment without '@' for a plain comment)")
            return XdrgenError([Diagnostic(path, max(line, 1), max(column, 1), msg, src)])
        if tok.type == "$END":
            line = len(lines) or 1
            column = len(lines[-1]) + 1 if lines else 1
        expected = set(err.accepts or err.expected)
    elif isinstance(err, lark.exceptions.UnexpectedCharacters):
        at = err.pos_in_stream or 0
        text = f"'{source[at]}'"
        expected = _accepted_after(source[:at]) or set(err.allowed or ())
    elif isinstance(err, lark.exceptions.UnexpectedEOF):
        text = "end of file"
        expected = set(err.expected)
        line = len(lines) or 1
        column = len(lines[-1]) + 1 if lines else 1
    else:
        text = str(err)
    words = sorted({_describe(e, parser) for e in expected if not e.startswith("__")})
    msg = f"unexpected {text}"
    if words:
        msg += "; expected one of: " + ", ".join(words)
    src = lines[line - 1] if 0 < line <= len(lines) else ""
    return XdrgenError([Diagnostic(path, max(line, 1), max(column, 1), msg, src)])


def parse(source: str, path: str) -> ir.Spec:
    """Parse a .x file; syntax errors raise :class:`XdrgenError`."""
    try:
        tree = _parser().parse(source)
    except lark.exceptions.UnexpectedInput as err:
        raise _syntax_error(path, source, err) from None
    definitions = _ToIR().transform(tree)
    return ir.Spec(path, source, definitions)
