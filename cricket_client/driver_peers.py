"""Several GPUs behind one server, in `cricket_client.driver` (re-exported there): peer
queries, peer access between contexts, copies between two devices' memory. Import it through
`cricket_client.driver`."""

from __future__ import annotations

from typing import Any

from ._args import size_t, uint
from ._types import as_int
from .driver import _SUCCESS, _conn, _handle, _out, _stream

__all__ = [
    "cuCtxDisablePeerAccess",
    "cuCtxEnablePeerAccess",
    "cuDeviceCanAccessPeer",
    "cuDeviceGetP2PAttribute",
    "cuMemcpyPeer",
    "cuMemcpyPeerAsync",
]


def cuDeviceCanAccessPeer(dev: Any, peerDev: Any) -> tuple[Any, int | None]:
    err, value = _conn().call("CU_DEVICE_CAN_ACCESS_PEER", as_int(dev), as_int(peerDev))
    return _out(err, value)


def cuDeviceGetP2PAttribute(attrib: Any, srcDevice: Any, dstDevice: Any) -> tuple[Any, int | None]:
    err, value = _conn().call(
        "CU_DEVICE_GET_P2P_ATTRIBUTE", int(attrib), as_int(srcDevice), as_int(dstDevice)
    )
    return _out(err, value)


def cuCtxEnablePeerAccess(peerContext: Any, Flags: int) -> tuple[Any]:
    flags = uint(Flags, "cuCtxEnablePeerAccess: Flags")
    return _out(
        _conn().call("CU_CTX_ENABLE_PEER_ACCESS", _handle(peerContext, "peerContext"), flags)[0]
    )


def cuCtxDisablePeerAccess(peerContext: Any) -> tuple[Any]:
    return _out(
        _conn().call("CU_CTX_DISABLE_PEER_ACCESS", _handle(peerContext, "peerContext"))[0]
    )


def cuMemcpyPeer(
    dstDevice: Any, dstContext: Any, srcDevice: Any, srcContext: Any, ByteCount: int
) -> tuple[Any]:
    return _out(
        _conn().call(
            "CU_MEMCPY_PEER",
            _handle(dstDevice, "dstDevice"),
            _handle(dstContext, "dstContext"),
            _handle(srcDevice, "srcDevice"),
            _handle(srcContext, "srcContext"),
            size_t(ByteCount, "cuMemcpyPeer: ByteCount"),
        )[0]
    )


def cuMemcpyPeerAsync(
    dstDevice: Any,
    dstContext: Any,
    srcDevice: Any,
    srcContext: Any,
    ByteCount: int,
    hStream: Any,
) -> tuple[Any]:
    _conn().post(
        "CU_MEMCPY_PEER_ASYNC",
        _handle(dstDevice, "dstDevice"),
        _handle(dstContext, "dstContext"),
        _handle(srcDevice, "srcDevice"),
        _handle(srcContext, "srcContext"),
        size_t(ByteCount, "cuMemcpyPeerAsync: ByteCount"),
        _stream(hStream),
    )
    return (_SUCCESS,)
