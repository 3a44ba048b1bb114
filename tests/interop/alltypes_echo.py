"""Python peers of alltypes.x: the echo service our server runs, and how our client calls it."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

from alltypes_cases import Case

# type of a case -> the echo procedure (version 1 unless noted) that takes and returns it
ECHO_PROCEDURE = {
    "scalars": "ECHO_SCALARS",
    "arrays": "ECHO_ARRAYS",
    "optionals": "ECHO_OPTIONALS",
    "chain": "ECHO_CHAIN",
    "by_int": "ECHO_BY_INT",
    "by_unsigned": "ECHO_BY_UNSIGNED",
    "by_enum": "ECHO_BY_ENUM",
    "by_bool": "ECHO_BY_BOOL",
    "text": "ECHO_TEXT",
    "hyper": "ECHO_HYPER",
    "many": "ECHO_MANY",  # its fields travel as six arguments
    "everything": "ECHO_EVERYTHING",  # version 2
}


def call_echo(v1: Any, v2: Any, case: Case, *, suffix: str = "") -> Any:
    """Calls the echo procedure of case's type with its value through generated clients.

    suffix "_async": sends the call and returns its Pending instead.
    """
    if case.type == "many":
        v = case.value
        return getattr(v1, f"ECHO_MANY{suffix}")(v.i, v.n, v.uh, v.l, v.c, v.d)
    client = v2 if case.type == "everything" else v1
    return getattr(client, ECHO_PROCEDURE[case.type] + suffix)(case.value)


def echo_services(m: ModuleType) -> tuple[Any, Any]:
    """Instances of V_Server subclasses for both versions that echo and remember what came.

    `received` holds (procedure name, value) in arrival order: the value echoed, the
    struct built from ECHO_MANY's arguments, SINK's argument, None for PING and PING2;
    `credentials` holds (procedure name, ctx.cred) in the same order.
    """

    class Recorder:
        def __init__(self) -> None:
            super().__init__()
            self.received: list[tuple[str, Any]] = []
            self.credentials: list[tuple[str, Any]] = []

        def _echo(self, ctx: Any, procedure: str, value: Any) -> Any:
            self.received.append((procedure, value))
            self.credentials.append((procedure, ctx.cred))
            return value

    class EchoV1(Recorder, m.ALLTYPES_V1_Server):  # type: ignore[misc,name-defined]
        def PING(self, ctx: Any) -> None:
            self._echo(ctx, "PING", None)

        def SINK(self, ctx: Any, value: Any) -> None:
            self._echo(ctx, "SINK", value)

        def ECHO_MANY(self, ctx: Any, i: int, n: str, uh: int, l: Any, c: int, d: float) -> Any:  # noqa: E741
            return self._echo(ctx, "ECHO_MANY", m.many(i=i, n=n, uh=uh, l=l, c=c, d=d))

        def ECHO_SCALARS(self, ctx: Any, value: Any) -> Any:
            return self._echo(ctx, "ECHO_SCALARS", value)

        def ECHO_ARRAYS(self, ctx: Any, value: Any) -> Any:
            return self._echo(ctx, "ECHO_ARRAYS", value)

        def ECHO_OPTIONALS(self, ctx: Any, value: Any) -> Any:
            return self._echo(ctx, "ECHO_OPTIONALS", value)

        def ECHO_CHAIN(self, ctx: Any, value: Any) -> Any:
            return self._echo(ctx, "ECHO_CHAIN", value)

        def ECHO_BY_INT(self, ctx: Any, value: Any) -> Any:
            return self._echo(ctx, "ECHO_BY_INT", value)

        def ECHO_BY_UNSIGNED(self, ctx: Any, value: Any) -> Any:
            return self._echo(ctx, "ECHO_BY_UNSIGNED", value)

        def ECHO_BY_ENUM(self, ctx: Any, value: Any) -> Any:
            return self._echo(ctx, "ECHO_BY_ENUM", value)

        def ECHO_BY_BOOL(self, ctx: Any, value: Any) -> Any:
            return self._echo(ctx, "ECHO_BY_BOOL", value)

        def ECHO_TEXT(self, ctx: Any, value: Any) -> Any:
            return self._echo(ctx, "ECHO_TEXT", value)

        def ECHO_HYPER(self, ctx: Any, value: Any) -> Any:
            return self._echo(ctx, "ECHO_HYPER", value)

    class EchoV2(Recorder, m.ALLTYPES_V2_Server):  # type: ignore[misc,name-defined]
        def PING2(self, ctx: Any) -> None:
            self._echo(ctx, "PING2", None)

        def ECHO_EVERYTHING(self, ctx: Any, value: Any) -> Any:
            return self._echo(ctx, "ECHO_EVERYTHING", value)

    return EchoV1(), EchoV2()


@dataclass
class PyServer:
    """Our RpcServer serving the echo services of both versions."""

    port: int  # on 127.0.0.1
    unix_path: str
    v1: Any
    v2: Any

    def last(self, procedure: str) -> Any:
        """The value of the last call of procedure, from either version."""
        for name, value in reversed(self.v1.received + self.v2.received):
            if name == procedure:
                return value
        raise AssertionError(f"our server never received {procedure}")
