"""Rig parts: where a session's server comes from and how it is spoken to.

- spawned: the harness runs the server binary (`start`/`stop`, own process group);
- launched: a rig's launch/stop scripts start and stop it (`Launcher`);
- attached: it runs already; the harness reaches it by URL and stops nothing (`Endpoint`).

This package's names are imported from here by the protocol; the modules below hold them:
`provision` (binary and model), `version`, `server`, `endpoint`, `identity`, `net`, `client`,
`stream`, `gpu`, `digests`.
"""

from .client import RequestSpec, new_http_client, stream_chat
from .digests import file_digest
from .endpoint import Endpoint, served_context, served_models
from .identity import gpu_used_mib, host_available_mib, props, props_diff, read_cmdline, rss_bytes
from .modelfile import model_sha256, shards
from .net import free_port
from .provision import ServerBinary, resolve_model, resolve_server_bin, server_build, server_version
from .server import (
    Launcher,
    LaunchSpec,
    Release,
    ServerProcess,
    last_log_line,
    start,
    stop,
    stop_all,
)

__all__ = [
    "Endpoint",
    "LaunchSpec",
    "Launcher",
    "Release",
    "RequestSpec",
    "ServerBinary",
    "ServerProcess",
    "file_digest",
    "free_port",
    "gpu_used_mib",
    "host_available_mib",
    "last_log_line",
    "model_sha256",
    "new_http_client",
    "props",
    "props_diff",
    "read_cmdline",
    "resolve_model",
    "resolve_server_bin",
    "rss_bytes",
    "served_context",
    "served_models",
    "server_build",
    "server_version",
    "shards",
    "start",
    "stop",
    "stop_all",
    "stream_chat",
]
