"""The one way the harness opens an httpx client: proxies off, and one TLS context for all.

httpx builds a verifying TLS context for every Client, loading the CA bundle each time: ~23 ms of
CPU (measured on this project's 2-core host), and the harness opens a client for every bounded
read of a server (/props, /slots, /metrics, /health). The context is built once, on the first
client, and shared: the same verification, without the harness's own CPU between measurements.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx


@functools.cache
def _tls() -> ssl.SSLContext:
    # httpx's own default (certifi's bundle, verification on), made once per process
    return httpx.create_ssl_context()


def http_client(**options: Any) -> httpx.Client:
    """An httpx.Client with `options`; trust_env=False keeps proxies off loopback servers."""
    return httpx.Client(trust_env=False, verify=_tls(), **options)
