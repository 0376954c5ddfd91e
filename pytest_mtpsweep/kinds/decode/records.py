"""A decode record's fields: which prompt of which session, then the streamed measurement.

One JSON line per measurement (`records/<session>.jsonl`): the identity below, the
`schema.Measurement` of the request (the rig's value of one streamed request, also what the
protocol's calibration reads), when it started, the keyed fields and provenance.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ...kindapi.records import schema

# Which measurement of which session: every decode record starts with these.
IDENTITY_FIELDS: tuple[str, ...] = (
    *schema.SESSION_IDENTITY_FIELDS,
    "prompt_id",
    "subset",
    "repeat",
    "position",
)
MEASUREMENT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(schema.Measurement))
# The two decode-rate endpoints: analysis name -> record field.
ENDPOINT_FIELDS: dict[str, str] = {
    "primary": "decode_rate_tps_primary",
    "interval": "decode_rate_tps_interval",
}
# The speculative mechanism of a drafting arm (issue 49), derived per record from the
# server's counts (`draft_n`, `draft_n_accepted`, `predicted_n`, `predicted_ms` of the
# measurement): analysis name -> record field. None in a record that drafted nothing, and in
# one whose counts cannot be (`mechanism_invalid` says why; the rate reading stands).
MECHANISM_FIELDS: dict[str, str] = {
    # The decode clock (predicted_ms) starts at the first token, which the prompt's pass made:
    # the steps it times made the other predicted_n - 1 tokens (as rig/stream.py's rate reads).
    "steps": "spec_steps",  # verify steps: predicted_n - 1 - draft_n_accepted
    "tokens_per_step": "tokens_per_step",  # L: (predicted_n - 1) / steps
    "drafted_per_step": "drafted_per_step",  # k-bar: draft_n / steps
    "step_ms": "step_ms",  # predicted_ms / steps
    # acceptance at draft position 1, 2, ...: only the server's trace-level log has it, which
    # a run does not turn on (docs/analysis.md), so it stays None
    "acc_per_pos": "acc_per_pos",
}
RECORD_FIELDS: tuple[str, ...] = (
    *IDENTITY_FIELDS,
    *MEASUREMENT_FIELDS,
    *MECHANISM_FIELDS.values(),
    "started_at",
)


def mechanism_fields(m: schema.Measurement) -> dict[str, Any]:
    """The mechanism fields of one measurement (MECHANISM_FIELDS) and its `mechanism_invalid`:
    derived only from counts the rig passed (rig/timings.py), with steps >= 1 checked again."""
    out: dict[str, Any] = dict.fromkeys(MECHANISM_FIELDS.values())
    out["mechanism_invalid"] = m.mechanism_invalid
    n = m.predicted_n if m.predicted_n is not None else m.completion_tokens
    if m.draft_n is None or m.draft_n_accepted is None or n is None or m.mechanism_invalid:
        return out
    decoded = n - 1  # after the first token, which the prompt's pass made
    if decoded < 1:
        return out  # no decode step to read
    steps = decoded - m.draft_n_accepted
    if steps < 1 or m.draft_n_accepted > m.draft_n or m.draft_n_accepted < 0:
        out["mechanism_invalid"] = (
            f"{m.draft_n_accepted} accepted of {m.draft_n} drafted in the {decoded} tokens "
            f"decoded after the first leaves {steps} verify steps"
        )
        return out
    out[MECHANISM_FIELDS["steps"]] = steps
    out[MECHANISM_FIELDS["tokens_per_step"]] = decoded / steps
    out[MECHANISM_FIELDS["drafted_per_step"]] = m.draft_n / steps
    if m.predicted_ms is not None and m.predicted_n is not None:
        out[MECHANISM_FIELDS["step_ms"]] = m.predicted_ms / steps
    return out


def decode_record(
    identity: dict[str, Any],
    measurement: schema.Measurement,
    started_at: str,
    keyed: dict[str, Any],
    provenance: dict[str, Any],
) -> dict[str, Any]:
    """One decode record: identity, the measurement, when, the keyed fields, provenance."""
    return {
        **{k: identity[k] for k in IDENTITY_FIELDS},
        **measurement.fields(),
        **mechanism_fields(measurement),
        "started_at": started_at,
        **keyed,
        **provenance,
    }
