"""An API key as a bearer header, from the environment variable a ladder names: read when a
request needs it, never stored, and refused in one line when unset or unfit for a header."""

from __future__ import annotations

import os

from ..base.redact import redact_url


def bearer(env: str | None, url: str, error: type[Exception]) -> dict[str, str]:
    """{"Authorization": "Bearer <key>"} from `env` now; {} without one; `error` says why not."""
    if env is None:
        return {}
    key = os.environ.get(env)
    if not key:
        raise error(
            f"the environment variable {env} that should hold the API key for {redact_url(url)} "
            "is not set; export it before the run."
        )
    if not key.isprintable() or any(c.isspace() for c in key):
        raise error(
            f"the API key in {env} holds whitespace or control characters, which no header "
            "may carry; export the key alone."
        )
    return {"Authorization": f"Bearer {key}"}
