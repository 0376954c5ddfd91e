"""The checklist: every preflight item a run's inputs call for, in table order, run once
before any server starts (the items themselves live in their own modules)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..rig.digests import default_digest_cache
from ..rig.gpu import load_nvml
from .artefacts import (
    check_chat_template,
    check_harness,
    check_ladder_file,
    check_launchers,
    check_models,
    check_run_dir,
    check_server_version,
    model_names,
)
from .endpoints import AttachedTarget, check_endpoint
from .endpoints import item_name as endpoint_item
from .items import (
    PreflightItem,
    check_waivers,
    compare_items,
    load_preflight_json,
    waived,
)
from .machine import (
    check_disk,
    check_gpu,
    check_host_idle,
    check_inactive_processes,
    check_inactive_units,
    check_ports,
    check_ram,
    check_server_processes,
)
from .quiet import ITEM as HOST_QUIET
from .quiet import QuietCheck, check_host_quiet
from .selftest import check_self_test
from .serverrun import ITEM as SERVER_RUNS
from .serverrun import check_server_runs


@dataclass(frozen=True)
class PreflightInputs:
    """Everything preflight checks; paths are as configured, resolved where needed."""

    run_dir: Path
    server_bin: Path | None
    expected_build: str | None
    ports: tuple[int, ...]
    host: str
    model_files: tuple[Path, ...]
    ram_floor_gb: float | None
    disk_floor_gb: float | None
    must_be_inactive_processes: tuple[str, ...]
    must_be_inactive_units: tuple[str, ...]
    launchers: dict[str, tuple[Path, str | None]]
    experiments_dir: Path
    ladder_file: Path
    package_version: str
    # the experiment kind's own items (a decode run's prompt set, an authoring run's tasks)
    kind_items: tuple[PreflightItem, ...] = ()
    chat_template_pin: str | None = None
    host_idle_pct: float | None = None
    run_bytes: int = 0  # what the run is expected to write (0: unknown)
    # servers earlier runs listed in servers/live.json that still run: (run dir, description)
    leftover_servers: tuple[tuple[Path, str], ...] = ()
    self_test: bool = False  # run the harness's own fast self-test as an item
    attached: tuple[AttachedTarget, ...] = ()  # servers the run attaches to, not launches
    server_source: str | None = None  # where server_bin came from ("--server-bin", ...)
    # builds as treatments: (treatment, binary, source) of each other build the run launches
    other_servers: tuple[tuple[str, Path, str], ...] = ()
    quiet: QuietCheck | None = None  # host_quiet: the host rule's thresholds (None: skipped)


def run_preflight(
    inputs: PreflightInputs,
    *,
    waive: frozenset[str] = frozenset(),
    against: Path | None = None,
    verify_digests: bool = False,
    digest_cache: Path | None = None,
) -> list[PreflightItem]:
    """Run every check; ``digest_cache`` None means ``default_digest_cache()``."""
    check_waivers(waive, item_names(inputs))
    # Read the earlier run first so a bad --against fails before any model is hashed.
    earlier = load_preflight_json(against / "preflight.json") if against is not None else None
    cache = digest_cache if digest_cache is not None else default_digest_cache()
    items = [
        check_gpu(load_nvml()),
        check_ram(inputs.ram_floor_gb),
        check_host_idle(inputs.host_idle_pct),
        check_host_quiet(inputs.quiet),
        check_disk(inputs.run_dir, inputs.disk_floor_gb, inputs.run_bytes),
        check_ports(inputs.host, inputs.ports),
        check_server_processes(inputs.server_bin, inputs.leftover_servers),
        check_inactive_processes(inputs.must_be_inactive_processes),
        check_inactive_units(inputs.must_be_inactive_units),
        *check_models(inputs.model_files, cache=cache, verify=verify_digests),
        *(
            [check_chat_template(inputs.model_files[0], inputs.chat_template_pin)]
            if inputs.model_files
            else []
        ),
        check_server_version(inputs.server_bin, inputs.expected_build),
        check_server_runs(
            inputs.server_bin,
            inputs.server_source,
            inputs.model_files[0] if inputs.model_files else None,
            inputs.host,
        ),
        *(
            replace(
                check_server_runs(
                    path, source, inputs.model_files[0] if inputs.model_files else None, inputs.host
                ),
                name=f"{SERVER_RUNS}:{key}",
            )
            for key, path, source in inputs.other_servers
        ),
        *(check_endpoint(target) for target in inputs.attached),
        *check_launchers(inputs.launchers),
        check_harness(inputs.package_version, inputs.experiments_dir),
        *([check_self_test()] if inputs.self_test else []),
        *inputs.kind_items,
        check_ladder_file(inputs.ladder_file),
        check_run_dir(inputs.run_dir),
    ]
    items = [waived(item, waive) for item in items]
    return compare_items(items, earlier) if earlier is not None else items


def item_names(inputs: PreflightInputs) -> list[str]:
    """The item names a run with these inputs produces, in table order."""
    return [
        "gpu",
        "ram",
        "host_idle",
        HOST_QUIET,
        "disk",
        "ports",
        "server_processes",
        "inactive_processes",
        "inactive_units",
        *model_names(inputs.model_files),
        *(["chat_template"] if inputs.model_files else []),
        "server_version",
        SERVER_RUNS,
        *(f"{SERVER_RUNS}:{key}" for key, _, _ in inputs.other_servers),
        *(endpoint_item(target.treatment) for target in inputs.attached),
        *(f"launcher:{name}" for name in inputs.launchers),
        "harness",
        *(["self_test"] if inputs.self_test else []),
        *(i.name for i in inputs.kind_items),
        "ladder_file",
        "run_dir",
    ]
