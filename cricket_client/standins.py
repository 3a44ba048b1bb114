"""Marking a mirror that answers without doing the work.

A function of cricket_client.driver or .runtime that exists only to refuse (for instance with
CUDA_ERROR_NOT_SUPPORTED and a message, for memory a remote client cannot share) is not
remoted: decorate it with `stand_in(reason)` and docs/coverage.md (tools/gen_coverage.py) lists
it under that reason instead of counting it. The reasons are the keys of REASONS there;
an unknown one fails the generator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["STAND_IN_ATTRIBUTE", "stand_in"]

F = TypeVar("F", bound=Callable[..., Any])
STAND_IN_ATTRIBUTE = "__cricket_stand_in__"


def stand_in(reason: str) -> Callable[[F], F]:
    """Mark `fn` as a stand-in that is not remoted, for `reason` (a key of
    tools/gen_coverage.py's REASONS, e.g. "unshareable")."""

    def mark(fn: F) -> F:
        setattr(fn, STAND_IN_ATTRIBUTE, reason)
        return fn

    return mark
