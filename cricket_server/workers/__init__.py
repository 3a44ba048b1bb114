"""Process isolation: each client connection served by a worker process of its own.

The main process listens and accepts; it never initializes CUDA. `WorkerPool` (`pool`) keeps one
warmed spare worker (`child`: backend created, imports done) and hands each accepted socket to
it over a Unix control channel (`control`), after `gate.AdmissionGate` has seen the
connection prove its token (or start TLS) when the server requires one; that worker serves the one connection with its own
backend, `SessionManager` and `WorkerService` (`service`), then exits. A worker that dies, or
whose CUDA state a sticky error has spoiled, takes nobody else with it.
"""

from .pool import WorkerPool, WorkerSpec, WorkerStartError

__all__ = ["WorkerPool", "WorkerSpec", "WorkerStartError"]
