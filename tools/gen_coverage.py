"""Generate docs/coverage.md and the README's coverage line from the code.

Every function of cuda.bindings.driver and cuda.bindings.runtime (the installed cuda-bindings,
found by introspection) is listed: remoted when cricket_client.driver / .runtime exports a
function of that name that is not a stand-in (cricket_client.standins), else the reason, the
first of REASONS whose pattern matches its name ("not yet remoted" when none does). The
remoted functions are discovered from the modules, so a re-run after new mirrors land counts
them.

Usage: python tools/gen_coverage.py [--check]     (`make coverage`)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cricket_client.standins import STAND_IN_ATTRIBUTE  # noqa: E402

OUTPUT = "docs/coverage.md"
README = "README.md"
COMMAND = "make coverage"
README_LINE = re.compile(r"^Coverage: .*$", re.M)

# reason -> (what it means, name pattern); the first match names the reason of a function
# that is not remoted. "todo" matches whatever the others do not.
REASONS: dict[str, tuple[str, str]] = {
    "unshareable": (
        "managed (unified) memory and host memory mapped into or registered with the GPU "
        "cannot stay coherent across a network",
        r"^cu(da)?(MemAllocManaged|MallocManaged|MemHostRegister|MemHostUnregister|HostRegister"
        r"|HostUnregister|MemHostGetDevicePointer|HostGetDevicePointer|MemHostGetFlags"
        r"|HostGetFlags|MemAdvise|MemPrefetch\w*|MemRangeGetAttributes?|StreamAttachMemAsync"
        r"|LibraryGetManaged|MemDiscard\w*)$",
    ),
    "graphics": (
        "OpenGL, EGL, VDPAU and Direct3D 12 (CUDA in Graphics capture) objects live on the "
        "client's display, the GPU on the server",
        r"^cu(da)?(Graphics\w*|GLGetDevices|EGL\w*|EventCreateFromEGLSync|VDPAU\w*"
        r"|Stream(Begin|End)CaptureToCig)$",
    ),
    "callbacks": (
        "a function of the client process that the GPU's work or the driver would call: host "
        "functions and nodes, stream callbacks, user objects, notifications",
        r"^cu(da)?(LaunchHostFunc\w*|StreamAddCallback|Graph(Exec)?(Add)?HostNode\w*"
        r"|UserObject\w*|Graph(Retain|Release)UserObject|Coredump(Register|Deregister)\w*"
        r"|LogsRegisterCallback|LogsUnregisterCallback|Device(Register|Unregister)"
        r"AsyncNotification)$",
    ),
    "foreign": (
        "IPC handles, external memory and semaphores, shareable and fabric handles, NvSciSync, "
        "multicast and logical endpoints",
        r"^cu(da)?(Ipc\w*|ImportExternal\w*|DestroyExternal\w*|ExternalMemoryGetMapped\w*"
        r"|(Signal|Wait)ExternalSemaphores\w*|Graph(Exec)?(Add)?ExternalSemaphores\w*"
        r"|MemExportToShareableHandle|MemImportFromShareableHandle|MemPoolExport\w*"
        r"|MemPoolImport\w*|\w*NvSciSync\w*|MemGetHandleForAddressRange|Fabric\w*"
        r"|Multicast\w*|LogicalEndpoint\w*|(Device)?FlushGPUDirectRDMAWrites)$",
    ),
    "process": (
        "profiler initialization, core dumps, logs, process checkpoints, entry points, export "
        "tables and kernels the runtime registered from the program's own image",
        r"^cu(da)?(ProfilerInitialize|Coredump\w*|Logs\w*|Checkpoint\w*|GetProcAddress"
        r"|GetExportTable|GetDriverEntryPoint\w*|GetKernel)$",
    ),
    "deprecated": (
        "texture and surface references, cuParamSet*, cuLaunch/cuLaunchGrid, context attach, "
        "device properties: use the current API",
        r"^cu(TexRef\w*|SurfRef\w*|ModuleGetTexRef|ModuleGetSurfRef|ParamSet\w*"
        r"|FuncSetBlockShape|FuncSetSharedSize|Launch|LaunchGrid|LaunchGridAsync|CtxAttach"
        r"|CtxDetach|DeviceComputeCapability|DeviceGetProperties"
        r"|LaunchCooperativeKernelMultiDevice)$",
    ),
    "helper": (
        "sizes, make_* constructors, the local runtime's version: they need no GPU",
        r"^(sizeof|make_\w+|getLocalRuntimeVersion)$",
    ),
    "todo": ("nothing stands in the way but the work", r""),
}
# How the tables name each reason.
LABELS = {
    "unshareable": "memory a remote client cannot share",
    "graphics": "graphics interop",
    "callbacks": "needs host callbacks",
    "foreign": "resources of other processes or APIs",
    "process": "the client process's own driver state",
    "deprecated": "deprecated by CUDA",
    "helper": "bindings helper, not yet offered",
    "todo": "not yet remoted",
}


def bindings_functions(module: ModuleType) -> list[str]:
    """The public functions a cuda.bindings module defines (not its classes or imports)."""
    names = []
    for name in dir(module):
        obj = getattr(module, name)
        if name.startswith("_") or isinstance(obj, type) or not callable(obj):
            continue
        if getattr(obj, "__module__", None) == module.__name__:
            names.append(name)
    return sorted(names)


def reason_of(name: str, client: ModuleType) -> str | None:
    """None when `client` remotes `name`, else the key of REASONS saying why not."""
    fn = vars(client).get(name)
    if callable(fn):
        reason = getattr(fn, STAND_IN_ATTRIBUTE, None)
        if reason is None:
            return None
        if reason not in REASONS:
            raise SystemExit(f"{client.__name__}.{name}: stand_in({reason!r}) is no reason of "
                             f"{Path(__file__).name}: {', '.join(REASONS)}")
        return str(reason)
    for key, (_what, pattern) in REASONS.items():
        if pattern and re.search(pattern, name):
            return key
    return "todo"


def _rows(bindings: ModuleType, client: ModuleType) -> list[tuple[str, str | None]]:
    return [(name, reason_of(name, client)) for name in bindings_functions(bindings)]


def generate() -> tuple[str, str]:
    """(the text of docs/coverage.md, the README's coverage line)."""
    import cuda.bindings
    from cuda.bindings import driver, runtime

    from cricket_client import driver as cdriver
    from cricket_client import runtime as cruntime

    version = cuda.bindings.__version__
    tables = [("cuda.bindings.driver", "cricket_client.driver", _rows(driver, cdriver)),
              ("cuda.bindings.runtime", "cricket_client.runtime", _rows(runtime, cruntime))]
    counts = {m: (len(rows), sum(r is None for _n, r in rows)) for m, _c, rows in tables}
    out = [
        "# Coverage of cuda.bindings",
        "",
        f"<!-- DO NOT EDIT: generated by tools/gen_coverage.py (`{COMMAND}`) from "
        f"cricket_client and cuda-bindings {version}. -->",
        "",
        f"Every function of cuda-bindings {version}'s `cuda.bindings.driver` and "
        "`cuda.bindings.runtime`, and whether the client's module of the same name runs it "
        "remotely. A function that is not remoted raises `NotSupportedRemotely` naming it "
        "(or, for a stand-in, answers the error local CUDA gives for an unsupported feature, "
        "with a message saying why).",
        "",
        "| module | functions | remoted | not remoted |",
        "| --- | ---: | ---: | ---: |",
    ]
    for module, (total, remoted) in counts.items():
        out.append(f"| `{module}` | {total} | {remoted} | {total - remoted} |")
    out += ["", "## Why not", "", "| reason | what it means | driver | runtime |",
            "| --- | --- | ---: | ---: |"]
    for key, (what, _pattern) in REASONS.items():
        n = [sum(r == key for _n, r in rows) for _m, _c, rows in tables]
        out.append(f"| {LABELS[key]} | {what} | {n[0]} | {n[1]} |")
    for module, client, rows in tables:
        out += ["", f"## `{module}`", "", f"| function | `{client}` |", "| --- | --- |"]
        for name, reason in rows:
            out.append(f"| `{name}` | {'remoted' if reason is None else LABELS[reason]} |")
    d_total, d_remoted = counts["cuda.bindings.driver"]
    r_total, r_remoted = counts["cuda.bindings.runtime"]
    line = (f"Coverage: {d_remoted} of the {d_total} functions of `cuda.bindings.driver` and "
            f"{r_remoted} of the {r_total} of `cuda.bindings.runtime` are remoted (cuda-bindings "
            f"{version}); [docs/coverage.md](docs/coverage.md) lists every function and, for "
            "the others, why not.")
    return "\n".join(out) + "\n", line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help=f"exit 1 when {OUTPUT} or the README's line is stale")
    args = ap.parse_args(argv)
    text, line = generate()
    readme = (ROOT / README).read_text(encoding="utf-8")
    if not README_LINE.search(readme):
        print(f"{README} has no line starting 'Coverage: ' to keep up to date", file=sys.stderr)
        return 2
    new_readme = README_LINE.sub(line, readme, count=1)
    out = ROOT / OUTPUT
    if args.check:
        current = out.read_text(encoding="utf-8") if out.exists() else ""
        if current != text or new_readme != readme:
            print(f"{OUTPUT} or the coverage line of {README} is stale: run `{COMMAND}`",
                  file=sys.stderr)
            return 1
        return 0
    out.write_text(text, encoding="utf-8")
    (ROOT / README).write_text(new_readme, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
