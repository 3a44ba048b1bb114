"""Server side of the bulk data paths (D8): copies whose bytes do not travel inside the RPC.

- `shm.ServerSegment`: a /dev/shm file the client maps after proving it can read it (same
  host); copies then name an offset and a size in it (DATA_SHM_*).
- `channels.ChannelListener` / `DataChannels`: extra TCP connections of one session,
  authenticated by a per-offer secret; a copy's bytes are split over them (DATA_TCP_*).
- `procedures.DataPathProcedures`: the CRICKET_V1 procedures 350-399, mixed into
  `CricketService`; the state lives per connection (`state_of(ctx)`), so the process (or
  thread) serving the connection does the copies in both isolation modes.
"""

from .channels import ChannelListener, DataChannels, secure_channel
from .procedures import DataPathProcedures, state_of
from .shm import ServerSegment

__all__ = [
    "ChannelListener",
    "DataChannels",
    "DataPathProcedures",
    "ServerSegment",
    "secure_channel",
    "state_of",
]
