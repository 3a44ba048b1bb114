"""Bulk data paths of the client (D8): which way each copy's bytes travel.

- `select`: the choice per copy (size thresholds, CRICKET_DATA_PATH=auto|rpc|shm|tcp).
- `shm`: the client's end of the server's shared-memory segment (same host, proven).
- `channels`: parallel TCP data channels authenticated by the offer's secret.
- `routes`: the local interface toward the server (pyroute2; InfiniBand preferred) and
  RDMA device discovery.
- `paths.DataPaths`: one connection's routing, used by `cricket_client.driver` copies.
"""

from .paths import DataPaths
from .select import Capabilities, Limits, Mode, Path, choose, mode_from_env

__all__ = ["Capabilities", "DataPaths", "Limits", "Mode", "Path", "choose", "mode_from_env"]
