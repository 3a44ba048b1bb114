"""Runtime pieces of generated RPC stubs: procedure descriptions and pending results."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cricket_xdr.xdr import Codec, Encoder

__all__ = ["Facts", "Pending", "Plan", "Procedure"]


@dataclass(frozen=True)
class Facts:
    """What the .x file states about a procedure (cricket_xdr.compiler.facts).

    ``replay``: "replay", "readonly", "uncounted", or "" where the spec states none.
    ``views``: indexes (from 0) of the arguments passed as views of the call record.
    ``handles``: (argument index, the kinds it may hold) of the arguments that hold handles.
    """

    pipelined: bool = False
    replay: str = ""
    views: tuple[int, ...] = ()
    handles: tuple[tuple[int, tuple[str, ...]], ...] = ()

    @property
    def counted(self) -> bool:
        """Whether the call counts for replay (numbered by client and server alike)."""
        return self.replay != "uncounted"


@dataclass(frozen=True)
class Plan:
    """How each end codes one procedure's call without codec objects (generated where its
    arguments or result are fixed-size; see cricket_xdr.compiler.emit_plans). A None part
    means: use the codecs.

    ``encode_args(*args)``: the call body (client); ``decode_args(body)``: the handler's
    positional arguments (server; XdrError for a body the codecs would refuse);
    ``decode_reply(body)``: ``(err, *fields)`` of a status or err-union result, the fields
    None on failure (client); ``encode_result(value)``: the reply body's pieces (server).
    """

    encode_args: Callable[..., Any] | None = None
    decode_args: Callable[[Any], tuple[Any, ...]] | None = None
    decode_reply: Callable[[Any], tuple[Any, ...]] | None = None
    encode_result: Callable[[Any], list[Any]] | None = None


@dataclass(frozen=True)
class Procedure:
    """One procedure of a program version, as a server dispatches it.

    ``name`` is the method of the generated ``V_Server`` class that serves it.
    """

    number: int
    name: str
    arg_codecs: tuple[Codec, ...]
    result_codec: Codec
    facts: Facts = Facts()
    plan: Plan = Plan()

    def args_encoder(self) -> Callable[..., Any]:
        """`encode(*args)`: the call body of positional arguments, by the plan's one struct
        where they are all fixed-size, else by the codecs in turn."""
        if self.plan.encode_args is not None:
            return self.plan.encode_args
        codecs = self.arg_codecs

        def encode(*args: Any) -> Any:
            enc = Encoder()
            for codec, arg in zip(codecs, args, strict=True):
                codec.pack(enc, arg)
            return enc.buffers()

        return encode


class Pending:
    """A call in flight whose reply body is decoded when the result is asked for."""

    __slots__ = ("_call", "_decode")

    def __init__(self, call: Any, decode: Callable[[Any], Any]) -> None:
        self._call = call
        self._decode = decode

    def result(self, timeout: float | None = None) -> Any:
        """Wait for the reply (RPC errors propagate) and return the decoded result."""
        return self._decode(self._call.result(timeout=timeout))

    def done(self) -> bool:
        """Whether the reply has arrived (or the call failed)."""
        return bool(self._call.done())

    def __repr__(self) -> str:
        return f"<Pending {self._call!r}>"
