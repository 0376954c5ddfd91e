"""A decode record's fields: which prompt of which session, then the streamed measurement.

One JSON line per measurement (`records/<session>.jsonl`): the identity below, the
`schema.Measurement` of the request (the rig's value of one streamed request, also what the
protocol's calibration reads), when it started, the keyed fields and provenance.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ...kindapi.records import SESSION_IDENTITY_FIELDS, Measurement

# Which measurement of which session: every decode record starts with these.
IDENTITY_FIELDS: tuple[str, ...] = (
    *SESSION_IDENTITY_FIELDS, "prompt_id", "subset", "repeat", "position",
)  # fmt: skip
MEASUREMENT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Measurement))
RECORD_FIELDS: tuple[str, ...] = (*IDENTITY_FIELDS, *MEASUREMENT_FIELDS, "started_at")
# The two decode-rate endpoints: analysis name -> record field.
ENDPOINT_FIELDS: dict[str, str] = {
    "primary": "decode_rate_tps_primary",
    "interval": "decode_rate_tps_interval",
}


def decode_record(
    identity: dict[str, Any],
    measurement: Measurement,
    started_at: str,
    keyed: dict[str, Any],
    provenance: dict[str, Any],
) -> dict[str, Any]:
    """One decode record: identity, the measurement, when, the keyed fields, provenance."""
    return {
        **{k: identity[k] for k in IDENTITY_FIELDS},
        **measurement.fields(),
        "started_at": started_at,
        **keyed,
        **provenance,
    }
