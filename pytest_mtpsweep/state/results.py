"""A run's records in one line of Python: `pytest_mtpsweep.load_records(run_dir)`.

pandas is imported when the function runs, never when the package is imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base import schema
from ..base.errors import RunDirError
from ..base.recordlines import read_lines
from .runread import RunReader

if TYPE_CHECKING:
    import pandas as pd

    from .runread import RecordText


def load_records(run_dir: str | Path, *, quarantined: bool = False) -> pd.DataFrame:
    """Every record of a run directory as a DataFrame, one row per measurement, in run order.

    The columns are the record's fields (a decode run's: `kinds/decode/records.py`; every
    record ends with the keyed fields and provenance). Only the sessions the analysis uses are read unless `quarantined` is
    True: then the sessions set aside come too, with their reason in a `quarantined` column
    (empty for kept sessions). A line that is no JSON object (one a killed run left
    half-written), or another run's record (its `run_id` or `preregistration_sha256` differs
    from plan.json's), is skipped, counted in `frame.attrs["unparsed_lines"]` and named, as
    `file:line: why` relative to the run directory, in `frame.attrs["unreadable"]`. Values are
    as the records hold them: the analysis checks their types, this reader does not.
    """
    import pandas as pd

    run = RunReader(Path(run_dir).expanduser())
    if not (run.path / schema.RECORDS_DIR).is_dir():
        raise RunDirError(
            f"{run.path} is not a run directory (it has no {schema.RECORDS_DIR}/); pass one like "
            "runs/<ladder>/<run-id>."
        )
    sources: list[tuple[RecordText, str | None]] = [(f, None) for f in run.record_files()]
    if quarantined:
        sources += [
            (held.records, held.why or "quarantined")
            for held in run.quarantined()
            if held.records is not None
        ]
    rows: list[dict[str, Any]] = []
    unreadable: list[str] = []
    for file, why in sources:
        read, bad = read_lines(file.lines, file.label, identity=file.identity)
        records = [line.record for line in read]
        unreadable += [str(b) for b in bad]
        if quarantined:
            records = [{**r, "quarantined": why or ""} for r in records]
        rows += records
    frame = pd.DataFrame(rows)
    if quarantined and not frame.empty:
        frame = frame.sort_values(["ordinal", "quarantined"], kind="stable", ignore_index=True)
    frame.attrs["unparsed_lines"] = len(unreadable)
    frame.attrs["unreadable"] = unreadable
    return frame
