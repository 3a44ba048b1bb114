"""cricket-xdrgen diagnostics: one test per error class, with message, line and column."""

from __future__ import annotations

import pytest

from cricket_xdr.compiler.driver import compile_source
from cricket_xdr.compiler.errors import XdrgenError

CASES = [
    # (id, source, line, column, message fragment)
    ("syntax", "struct s {\n    int a\n};\n", 3, 1, "unexpected '}'; expected one of: ';', '<', '['"),
    ("bad character", "struct s { int $a; };\n", 1, 16, "unexpected '$'; expected one of: '*', identifier"),
    ("end of file", "struct s {\n int a;\n", 2, 8, "unexpected end of file; expected one of:"),
    ("undefined type", "struct s {\n    foo a;\n};\n", 2, 5, "undefined type 'foo'"),
    ("constant as type", "const N = 1;\nstruct s { N a; };\n", 2, 12, "'N' is a constant, not a type"),
    ("duplicate name", "const A = 1;\nstruct A { int x; };\n", 2, 8,
     "duplicate name 'A' (first defined at 1:7)"),
    ("duplicate enum member", "enum e { X = 1 };\nenum f { X = 2 };\n", 2, 10, "duplicate name 'X'"),
    ("duplicate enum value", "enum e { X = 1, Y = 1 };\n", 1, 17, "duplicate enum value 1 in enum e"),
    ("duplicate field", "struct s {\n int a;\n int a;\n};\n", 3, 6, "duplicate field 'a' in struct s"),
    ("duplicate case", "union u switch (int d) {\ncase 1: int a;\ncase 1: int b;\n};\n", 3, 6,
     "union u: duplicate case value 1 (first at 2:6)"),
    ("case of another enum", "enum e { X = 1 };\nenum f { Z = 2 };\n"
     "union u switch (e d) {\ncase Z: int a;\n};\n", 4, 6, "case Z is not a value of enum e"),
    ("case outside bool", "union u switch (bool d) {\ncase 2: int a;\n};\n", 2, 6,
     "case 2 (2) is not a value of type bool"),
    ("negative case of unsigned", "union u switch (unsigned int d) {\ncase -1: int a;\n};\n", 2, 6,
     "is not a value of type unsigned int"),
    ("bad discriminant", "union u switch (hyper d) {\ncase 1: int a;\n};\n", 1, 23,
     "discriminant 'd' must be int, unsigned int, bool or an enum, not 'hyper'"),
    ("bound is a type", "struct s { int a; };\ntypedef int x<s>;\n", 2, 15, "'s' is a type, not a constant"),
    ("bound undefined", "typedef opaque x<NOPE>;\n", 1, 18, "undefined constant 'NOPE'"),
    ("negative size", "const N = -3;\ntypedef int x[N];\n", 2, 15,
     "array size of 'x' must be a non-negative constant, got -3"),
    ("negative bound", "typedef string x<-1>;\n", 1, 18, "string bound of 'x' must be a non-negative"),
    ("quadruple", "struct s {\n    quadruple q;\n};\n", 2, 5, "type 'quadruple' is not supported"),
    ("duplicate procedure number", "program P {\n version V {\n  void A(void) = 1;\n"
     "  void B(void) = 1;\n } = 1;\n} = 1;\n", 4, 18, "procedure number 1 duplicated in version V"),
    ("duplicate version number", "program P {\n version V { void A(void) = 1; } = 1;\n"
     " version W { void B(void) = 1; } = 1;\n} = 1;\n", 3, 36, "version number 1 of W"),
    ("void field", "struct s {\n    void;\n};\n", 2, 5,
     "void is only allowed as a union arm or a procedure result, not a field of struct s"),
    ("void after an argument", "program P { version V { void A(int, void) = 1; } = 1; } = 1;\n", 1, 37,
     "unexpected 'void'"),
    ("invalid octal", "const A = 09;\n", 1, 11, "invalid number '09'"),
    ("struct holding itself", "struct a {\n int x;\n a inner;\n};\n", 1, 8,
     "struct a contains itself by value (through inner); make a field optional (*)"),
    ("self-referencing constant", "const A = A;\n", 1, 11, "constant 'A' is defined in terms of itself"),
]


@pytest.mark.parametrize(("source", "line", "column", "message"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_names_file_line_column(source: str, line: int, column: int, message: str) -> None:
    with pytest.raises(XdrgenError) as info:
        compile_source(source, "spec/t.x")
    first = info.value.diagnostics[0]
    text = str(first)
    assert text.startswith(f"spec/t.x:{line}:{column}: error: "), text
    assert message in text
    src_line, caret = text.splitlines()[1:3]
    assert src_line == source.splitlines()[line - 1]
    assert caret == " " * (column - 1) + "^"


def test_all_semantic_errors_are_reported_together() -> None:
    src = "struct s {\n foo a;\n bar b;\n};\n"
    with pytest.raises(XdrgenError) as info:
        compile_source(src, "t.x")
    assert [(d.line, d.column) for d in info.value.diagnostics] == [(2, 2), (3, 2)]


def test_procedure_name_repeated_with_another_number_is_an_error() -> None:
    src = ("program P {\n version V { void A(void) = 1; } = 1;\n"
           " version W { void A(void) = 2; } = 2;\n} = 1;\n")
    with pytest.raises(XdrgenError, match="'A' is defined again with a different number"):
        compile_source(src, "t.x")
    ok = src.replace("void A(void) = 2", "void A(void) = 1")
    assert "A = 1" in compile_source(ok, "t.x")
