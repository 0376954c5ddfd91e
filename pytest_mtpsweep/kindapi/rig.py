"""The door's rig: requests to a server as a kind makes them. One streamed request
(`stream_chat`), bounded reads and their checks, a response's usage, an API key's header, a
process's end in words, the GPU's energy counter."""

from __future__ import annotations

from ..rig import stream_chat
from ..rig.bearer import bearer
from ..rig.bounds import ReadBound
from ..rig.exits import exit_of
from ..rig.gpu import Energy
from ..rig.served import model_reason
from ..rig.usage import read_usage

__all__ = [  # noqa: RUF022 -- grouped as docs/architecture/10-front-door.md lists them
    # one request and its checks
    "stream_chat",
    "ReadBound",
    "model_reason",
    "read_usage",
    "bearer",
    # the host, the process, the counters
    "exit_of",
    "Energy",
]
