"""Bringing up an attached server: one the harness did not start and will not stop.

A session is the span in which this treatment's endpoint is measured. The witnesses that still
apply run (readiness, identity from `/v1/models`, `/props`, `/version`, the served context, the
argv a flags file or command gives, checked for the treatment's flags, the `model` of every
response); those that cannot are recorded as `not applicable: attached`, never passed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import rig
from ..base import schema
from ..base.errors import ServerError
from ..base.redact import redact_url
from ..rig import serverargv, specmetrics
from .progress import Progress, describe
from .serveridentity import argv_contains

if TYPE_CHECKING:
    from ..state.live import LiveSession

NOT_APPLICABLE = "not applicable: attached"
# What cannot be witnessed of a server the harness did not start: said so, never passed.
ATTACHED_NOT_APPLICABLE = (
    "argv_from_proc",  # its process is not ours to read (it may be in a container or elsewhere)
    "rss",
    "gpu_memory",  # after load and after release: the load is not in the session
    "cpu_affinity",
    "release",  # nothing is stopped
    "server_binary_version",  # its /props build_info or /version stand in where offered
    "model_file_digest",  # the model it serves is what /v1/models names
)


def endpoint_of(live: LiveSession) -> rig.Endpoint:
    t = live.ctx.ladder.treatment(live.slot.treatment)
    assert t.base_url is not None, "an attached treatment has a base_url"
    return rig.Endpoint(t.base_url, t.api_key_env, t.ready_url)


def attach(live: LiveSession, progress: Progress) -> str | None:
    """Wait for the endpoint, witness what can be; the reason it may not be measured, or None."""
    info, endpoint = live.info, endpoint_of(live)
    missing = {name: NOT_APPLICABLE for name in ATTACHED_NOT_APPLICABLE}
    info.update({"rig": "attached", "base_url": endpoint.shown, "not_applicable": missing})
    live.endpoint, live.base_url = endpoint, endpoint.base_url
    name, what = live.slot.name, describe(live.slot)

    def on_wait(waited_s: float, last: str) -> None:
        progress.loading(name, what, waited_s, last)

    info["load_s"] = endpoint.wait_ready(live.ctx.ladder.ready_timeout_s, on_wait)
    progress.ready(name, what, info["load_s"])
    ident = endpoint.identity()
    props = ident.get("/props")
    props = props if isinstance(props, dict) else {}
    alias = live.ctx.ladder.alias(live.slot.treatment)
    n_ctx, ctx_source = rig.served_context(ident, alias)
    info.update(
        {
            "endpoint_identity": ident,
            "props_start": props,
            "served_models": rig.served_models(ident),
            "n_ctx": n_ctx,
            "build_info": props.get("build_info") or ident.get("/version"),
        }
    )
    if n_ctx is None:
        missing["served_context"] = f"{NOT_APPLICABLE} (the server reports no context size)"
    if not isinstance(props.get("chat_template"), str):
        missing["chat_template"] = f"{NOT_APPLICABLE} (the server does not report its template)"
    argv = _argv(live)
    if argv is None:
        missing["argv"] = f"{NOT_APPLICABLE} (no flags_file or flags_command in the ladder)"
    _spec_metrics(live, endpoint)
    return _startup_error(live, argv, n_ctx, ctx_source)


def end_identity(live: LiveSession) -> None:
    """What the server says about itself at the session's end, against its start: `/props`
    where it has one, else the models `/v1/models` lists (its cards carry a fresh `created`
    each time, so the whole document would always differ)."""
    info = live.info
    assert live.endpoint is not None
    ident = live.endpoint.identity()
    info["endpoint_identity_end"] = ident
    props = ident.get("/props")
    info["props_end"] = props if isinstance(props, dict) else {}
    if info.get("props_start"):
        info["props_changed"] = rig.props_diff(info.get("props_start") or {}, info["props_end"])
        info["props_stable"] = bool(info["props_end"]) and not info["props_changed"]
        return
    start, end = info.get("served_models") or [], rig.served_models(ident)
    info["props_changed"] = [] if start == end else ["/v1/models"]
    info["props_stable"] = bool(end) and start == end


def _argv(live: LiveSession) -> list[str] | None:
    """The server's argv from the ladder's flags file or command, kept as the flags file of a
    launched session is; None when the ladder names neither."""
    t, info = live.ctx.ladder.treatment(live.slot.treatment), live.info
    try:
        if t.flags_file is not None:
            text, source = serverargv.read_flags_file(t.flags_file), f"flags_file {t.flags_file}"
        elif t.flags_command is not None:
            cwd = live.ctx.ladder.path.parent
            text = serverargv.run_flags_command(t.flags_command, cwd)
            source = f"flags_command {list(t.flags_command)}"
        else:
            return None
    except ServerError as exc:
        info["error"] = str(exc)
        raise
    argv = serverargv.split_argv(text)
    live.ctx.run_dir.write_text_new(schema.flags_file(live.slot.name), " ".join(argv) + "\n")
    info["argv"], info["argv_source"] = argv, source
    return argv


def _spec_metrics(live: LiveSession, endpoint: rig.Endpoint) -> None:
    """Whether each request reads the spec-decode counters: `metrics = true` demands them,
    `false` forbids, absent reads them when `/metrics` has them."""
    wanted = live.ctx.ladder.treatment(live.slot.treatment).metrics
    if wanted is False:
        live.info["spec_metrics"] = "not read (metrics = false in the ladder)"
        return
    found, why = endpoint.spec_counters()
    if found is None and wanted:
        error = (
            f"the server at {redact_url(endpoint.url(specmetrics.METRICS_PATH))} shows no "
            f"{specmetrics.ACCEPTED} ({why}); serve with speculative decoding and metrics on, "
            "or set metrics = false in the ladder."
        )
        live.info["error"] = error
        raise ServerError(error)
    live.spec_metrics = found is not None
    live.info["spec_metrics"] = (
        f"read before and after each request from {specmetrics.METRICS_PATH}"
        if found is not None
        else f"not read ({why})"
    )


def _startup_error(
    live: LiveSession, argv: list[str] | None, n_ctx: int | None, ctx_source: str | None
) -> str | None:
    wanted = live.ctx.treatment_args(live.slot)
    if argv is not None and not argv_contains(argv, wanted):
        return (
            f"the attached server's argv ({live.info.get('argv_source')}) lacks the treatment "
            f"flags {wanted}; attach the server this treatment describes, or fix its args."
        )
    ctx_size = live.ctx.ladder.ctx_size
    if n_ctx is not None and n_ctx != ctx_size:
        return (
            f"the attached server serves a context of {n_ctx} tokens (its {ctx_source}), not the "
            f"ladder's {ctx_size}; set server.ctx_size in the ladder to what it serves."
        )
    return None
