"""The module a library owns in a context (cuLibraryGetModule, procedure 915) and its unified
functions (916).

A library's module is a `module` handle (`LibraryModuleRecord`, a ModuleRecord without an
image of its own), one per library and context, made on the first cuLibraryGetModule in
that context; cuModuleGetFunction, cuModuleGetGlobal and the listing calls take it as any
module. It is the library's: cuModuleUnload refuses it with CUDA_ERROR_NOT_PERMITTED, as
CUDA does; it ends with the library (cuLibraryUnload) or with its context. A checkpoint
keeps it with its library (`library_image.modules`), and a restore asks the reloaded
library for it again under the same handle.
"""

from __future__ import annotations

from dataclasses import dataclass

from cricket_server.backends.base import CUDA_ERROR_NOT_PERMITTED, CudaError
from cricket_server.resources import HandleKind, LibraryRecord, ModuleRecord
from cricket_server.session_modules import SessionModules

__all__ = ["LibraryModuleRecord", "SessionLibraryModules"]


@dataclass
class LibraryModuleRecord(ModuleRecord):
    """The module library `library` owns in context `ctx` (`image` empty: the library's)."""

    library: int = 0


class SessionLibraryModules(SessionModules):
    """cuLibraryGetModule, cuLibraryGetUnifiedFunction; cuModuleUnload and cuLibraryUnload
    as they concern a library's modules."""

    def library_modules(self, library: int) -> list[LibraryModuleRecord]:
        """The modules of `library` handed out, in order of handle."""
        return sorted(
            (
                r
                for r in self.handles.of_kind(HandleKind.MODULE)
                if isinstance(r, LibraryModuleRecord) and r.library == library
            ),
            key=lambda r: r.handle,
        )

    def library_get_module(self, handle: int) -> int:
        call = "cuLibraryGetModule"
        ctx = self.current(call)
        library = self._library(call, handle)
        for record in self.library_modules(handle):
            if record.ctx == ctx.handle:
                return record.handle
        obj = self.bsession.library_get_module(library.obj)
        made = self.handles.add(
            HandleKind.MODULE,
            LibraryModuleRecord,
            ctx=ctx.handle,
            obj=obj,
            image=b"",
            jit_options={},
            library=handle,
        )
        return made.handle

    def library_get_unified_function(self, handle: int, symbol: str) -> int:
        call = "cuLibraryGetUnifiedFunction"
        self.require_init(call)
        library = self._library(call, handle)
        with self._on_device(self._library_device()):
            return self.bsession.library_get_unified_function(library.obj, symbol)

    def _library_device(self) -> int:
        """The current context's device, else device 0 (libraries are context-free)."""
        if self._stack and self._stack[-1] in self.handles:
            return self._ctx("cuLibraryGetUnifiedFunction", self._stack[-1]).dev
        return 0

    def module_unload(self, handle: int) -> None:
        record = self.handles.lookup(handle)
        if isinstance(record, LibraryModuleRecord):
            self.require_init("cuModuleUnload")
            raise CudaError(
                CUDA_ERROR_NOT_PERMITTED,
                f"cuModuleUnload: module {handle:#x} is library {record.library:#x}'s "
                "(cuLibraryGetModule): it goes with cuLibraryUnload",
            )
        super().module_unload(handle)

    def _forget_library(self, record: LibraryRecord) -> None:
        for module in self.library_modules(record.handle):
            self._forget_module(module)
        super()._forget_library(record)
