"""cricket-xdrgen: compiles XDR/RPC language files (RFC 4506, RFC 5531) into Python modules.

Stages: :mod:`.parser` (lark grammar -> :mod:`.ir`), :mod:`.checks` (names, constants,
types, the facts of :mod:`.facts`), :mod:`.emit_python` (one deterministic module, struct
coders by :mod:`.emit_coders`); :mod:`.driver` runs them and :mod:`.cli` is the command.
"""
