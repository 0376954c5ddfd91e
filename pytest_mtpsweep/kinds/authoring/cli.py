"""The authoring kind's own `mtpsweep` subcommands: `mtpsweep tasks import humaneval DIR`."""

from __future__ import annotations

from typing import Any


def register(sub: Any) -> None:
    from .humaneval import register_cli

    register_cli(sub)
