"""Conditional graph nodes: an IF node with a then and an else body and a SWITCH node with
three bodies (after NVIDIA's graphConditionalNodes sample, the parts whose condition is the
handle's default value).

cudaGraphConditionalHandleCreate makes the handle with its default launch value;
cudaGraphAddNode with a conditional node returns the body graphs in
params.conditional.phGraph_out, which are filled like any graph. Each launch starts from the
default value (cudaGraphCondAssignDefault) and runs the body it selects.
"""

from __future__ import annotations

import sys

import numpy as np
from common import check
from cuda.bindings import runtime

N = 1024
COND = runtime.cudaGraphConditionalNodeType


def set_words(graph: object, d_out: int, value: int) -> None:
    """A memset node writing `value` to every 32-bit word of d_out."""
    params = runtime.cudaMemsetParams()
    params.dst = d_out
    params.value = value
    params.elementSize = 4
    params.width = N
    params.height = 1
    check(runtime.cudaGraphAddMemsetNode(graph, None, 0, params))


def conditional_graph(kind: object, size: int, default: int) -> tuple[object, list[object]]:
    """A graph holding one conditional node; (graph, its body graphs)."""
    graph = check(runtime.cudaGraphCreate(0))
    handle = check(runtime.cudaGraphConditionalHandleCreate(
        graph, default, runtime.cudaGraphConditionalHandleFlags.cudaGraphCondAssignDefault))
    params = runtime.cudaGraphNodeParams()
    params.type = runtime.cudaGraphNodeType.cudaGraphNodeTypeConditional
    params.conditional.handle = handle
    params.conditional.type = kind
    params.conditional.size = size
    check(runtime.cudaGraphAddNode(graph, None, None, 0, params))
    return graph, list(params.conditional.phGraph_out)


def run(graph: object, d_out: int, stream: object) -> int:
    check(runtime.cudaMemset(d_out, 0, N * 4))
    exec_ = check(runtime.cudaGraphInstantiate(graph, 0))
    check(runtime.cudaGraphLaunch(exec_, stream))
    check(runtime.cudaStreamSynchronize(stream))
    out = np.zeros(N, dtype=np.uint32)
    check(runtime.cudaMemcpy(out.ctypes.data, d_out, out.nbytes,
                             runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost))
    check(runtime.cudaGraphExecDestroy(exec_))
    return int(out[0]) if np.all(out == out[0]) else -1


def main() -> int:
    print("Conditional nodes: IF and SWITCH bodies chosen by the handle's default value")
    check(runtime.cudaSetDevice(0))
    d_out = check(runtime.cudaMalloc(N * 4))
    stream = check(runtime.cudaStreamCreate())
    ok = True
    for default in (1, 0):
        graph, (then, otherwise) = conditional_graph(COND.cudaGraphCondTypeIf, 2, default)
        set_words(then, d_out, 1)
        set_words(otherwise, d_out, 2)
        got = run(graph, d_out, stream)
        print(f"IF with value {default}: ran the {'then' if got == 1 else 'else'} body")
        ok &= got == (1 if default else 2)
        check(runtime.cudaGraphDestroy(graph))
    for default in (2, 5):
        graph, bodies = conditional_graph(COND.cudaGraphCondTypeSwitch, 3, default)
        for i, body in enumerate(bodies):
            set_words(body, d_out, 100 + i)
        got = run(graph, d_out, stream)
        print(f"SWITCH with value {default}: " + (f"ran body {got - 100}" if got else "ran no body"))
        ok &= got == (100 + default if default < 3 else 0)
        check(runtime.cudaGraphDestroy(graph))
    check(runtime.cudaStreamDestroy(stream))
    check(runtime.cudaFree(d_out))
    print("Test PASSED" if ok else "Test FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
