"""A tiny experiment kind that lives outside the package, for the tests: the latency of one
GET of a path (default `/health`) on each attached target, many times per session.

It follows ARCHITECTURE.md's "Adding a kind" and nothing else: this package and its entry
point (the test writes a `*.dist-info` declaring `probe = tests.kinds.probe_kind:KIND` in the
group `pytest_mtpsweep.kinds`) are all there is; not a line of pytest_mtpsweep names it. This
module is the declaration every pytest process imports, so it imports nothing heavy.
"""

from __future__ import annotations

from pytest_mtpsweep.kindapi import Kind, Opt

KIND = Kind(
    name="probe",
    fixture="probe",
    summary="One timed GET of the probed path (probe kind), recorded; assert `.valid`.",
    ladder=f"{__name__}.ladder:SPEC",
    run=f"{__name__}.run:prepare",
    analyse=f"{__name__}.analysis:analyse_command",
    options=(
        Opt(
            "--probe-requests",
            "probe_requests",
            "probe: GETs per session (overrides the ladder's requests)",
            int,
            metavar="N",
            overrides="requests",
        ),
    ),
    resume_fields=("probe",),  # the probed path and the requests per session
)
