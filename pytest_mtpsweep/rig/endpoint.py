"""An attached server: one the harness did not launch and will not stop.

It is reached by its base URL (and a bearer key read from the environment variable the ladder
names, at request time, never stored); it is ready when it answers; what it says about itself
(`/v1/models`, `/props`, `/version`) is its identity.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from ..base.errors import ReplyCut, ServerError
from ..base.redact import redact_url
from . import bounds, specmetrics
from .bearer import bearer
from .bounds import ReadBound
from .readiness import wait_until_ready

IDENTITY_PATHS = ("/v1/models", "/props", "/version")


@dataclass(frozen=True)
class Endpoint:
    """Where an attached server answers, and the name of the variable holding its key."""

    base_url: str
    api_key_env: str | None = None
    ready_url: str | None = None  # a path or URL that answers 200 once the server is ready

    def headers(self) -> dict[str, str]:
        """The Authorization header, read from the environment now (empty without a key)."""
        return bearer(self.api_key_env, self.shown, ServerError)

    @property
    def shown(self) -> str:
        """The base URL as it may be printed or written: its password hidden."""
        return redact_url(self.base_url)

    def url(self, path: str) -> str:
        """`path` on this server (a whole URL is taken as it is)."""
        return path if "://" in path else f"{self.base_url}{path}"

    def get(self, path: str, timeout_s: float = 10.0) -> httpx.Response:
        """`path`, read whole within `timeout_s` and a probe's bytes (ReplyCut past them)."""
        return bounds.get(self.url(path), ReadBound.probe(timeout_s), self.headers())

    @property
    def ready_paths(self) -> tuple[str, ...]:
        return (self.ready_url,) if self.ready_url else ("/v1/models", "/health")

    def probe(self) -> str | None:
        """Why the server is not ready now (None: it is). Probes carry the key, like requests."""
        last = "no answer"
        for path in self.ready_paths:
            try:
                status = self.get(path, timeout_s=5.0).status_code
            except httpx.HTTPError as exc:
                last = redact_url(f"unreachable ({type(exc).__name__}: {exc})")
                continue
            except ReplyCut as exc:  # a server that answers without end is not ready either
                last = f"{path}: {exc}"
                continue
            if status == 200:
                return None
            last = f"HTTP {status} from {redact_url(path)}"
            if status in (401, 403):
                break  # the key, not the server: waiting will not help
        return last

    def refused_key(self, reason: str | None) -> str | None:
        """The fix when the server refused the key (401/403), else None."""
        if reason is None or not reason.startswith(("HTTP 401", "HTTP 403")):
            return None
        if self.api_key_env is None:
            return (
                f"The server at {self.shown} wants an API key ({reason}); name the variable "
                "that holds it with api_key_env in the ladder."
            )
        return (
            f"The server at {self.shown} refused the key in {self.api_key_env} ({reason}); "
            f"export a valid key in {self.api_key_env}."
        )

    def wait_ready(
        self, timeout_s: float, on_wait: Callable[[float, str], None] | None = None
    ) -> float:
        """Seconds until `ready_url` (default `/v1/models` or `/health`) answers 200; ServerError
        if it never does.

        `on_wait`, if given, hears (seconds waited, the last answer) about once a second.
        """

        def probe() -> str | None:
            why = self.probe()
            refused = self.refused_key(why)
            if refused is not None:  # the key, not the server: waiting will not help
                raise ServerError(refused)
            return why

        waited = wait_until_ready(probe, timeout_s, 0.5, on_wait)
        if not waited.ready:
            raise ServerError(
                f"the attached server at {self.shown} did not answer within "
                f"{timeout_s:.0f} s ({waited.last}); start it, or check base_url in the ladder."
            )
        return waited.seconds

    def identity(self) -> dict[str, Any]:
        """Whatever the server says about itself, by path; absent paths are left out."""
        out: dict[str, Any] = {}
        for path in IDENTITY_PATHS:
            with contextlib.suppress(httpx.HTTPError, ReplyCut, ValueError):
                r = self.get(path)
                if r.status_code == 200:
                    out[path] = r.json()
        return out

    def spec_counters(self) -> tuple[specmetrics.SpecCounters | None, str]:
        """The spec-decode totals now, or None and why not."""
        try:
            r = self.get(specmetrics.METRICS_PATH, timeout_s=5.0)
        except httpx.HTTPError as exc:
            return None, f"{type(exc).__name__}: {exc}"
        except ReplyCut as exc:
            return None, str(exc)
        if r.status_code != 200:
            return None, f"HTTP {r.status_code} from {specmetrics.METRICS_PATH}"
        found = specmetrics.spec_counters(r.text)
        return found, "" if found is not None else "no spec_decode counters on the page"


def served_models(identity: dict[str, Any]) -> list[str]:
    """The model ids an OpenAI-compatible `/v1/models` lists."""
    data = (identity.get("/v1/models") or {}).get("data")
    return [str(m.get("id")) for m in data if isinstance(m, dict)] if isinstance(data, list) else []


def served_context(identity: dict[str, Any], model: str) -> tuple[int | None, str | None]:
    """The context an attached server serves, and where it said so: llama-server's `/props`
    (`n_ctx` of its slot), else `max_model_len` of the model in `/v1/models` (vLLM, SGLang)."""
    props = identity.get("/props")
    if isinstance(props, dict):
        n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
        if isinstance(n_ctx, int):
            return n_ctx, "/props"
    data = (identity.get("/v1/models") or {}).get("data")
    for m in data if isinstance(data, list) else []:
        if isinstance(m, dict) and m.get("id") == model and isinstance(m.get("max_model_len"), int):
            return int(m["max_model_len"]), "/v1/models"
    return None, None
