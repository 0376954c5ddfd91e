"""A malformed trace is refused before any server starts, in one line naming the trace file, its
line and the field: by `mtpsweep lint` (one process for every case) and by a pytest run, which
stops at configuration (no run directory, no server) with a usage error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mtpsweep.kinds.load import trace

LADDER = """kind = "load"
question = "q?"
baseline = "a"
max_tokens = 16
{fields}
[trace]
path = "../traces/{trace}"
format = "{fmt}"
{table}
[model]
{model}
[server]
ctx_size = 2048
[[treatments]]
key = "a"
{a}
[[treatments]]
key = "b"
{b}
"""
ATTACHED = {"model": 'id = "m"', "a": 'base_url = "http://127.0.0.1:9"',
            "b": 'base_url = "http://127.0.0.1:10"'}  # fmt: skip
LAUNCHED = {"model": 'path = "embedded:qwen2.5-coder-0.5b"\nid = "m"', "a": "",
            "b": 'args = ["--spec-type", "ngram-simple"]'}  # fmt: skip
OK = {"timestamp": 0, "input_length": 100, "output_length": 10, "hash_ids": [0]}
HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"


def jsonl(*records: object) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


# case -> (trace file text, format, [trace] extra, top-level fields, launched?, needles)
CASES: dict[str, tuple[str | None, str, str, str, bool, tuple[str, ...]]] = {
    "a missing file": (None, "mooncake", "", "", False,
                       ("trace.path '../traces/a-missing-file.jsonl'", "cannot be read")),
    "a missing column": (f"TIMESTAMP,ContextTokens\n{'2023-11-16 18:17:03.9,10'}\n", "azure", "",
                         "", False, (":1: missing column 'GeneratedTokens'",)),
    "a negative time": (jsonl(OK, OK | {"timestamp": -1}), "mooncake", "", "", False,
                        (":2: field 'timestamp' is below 0",)),
    "time going back": (jsonl(OK | {"timestamp": 9000}, OK | {"timestamp": 10}), "mooncake", "",
                        "", False, (":2: field 'timestamp' goes back 8,990.000 ms",)),
    "a non-numeric length": (f"{HEADER}\n2023-11-16 18:17:03.9,lots,3\n", "azure", "", "", False,
                             (":2: field 'ContextTokens' is text of 4 character(s), not a whole number",)),
    "a negative length": (jsonl(OK, OK, OK | {"output_length": -7}), "mooncake", "", "", False,
                          (":3: field 'output_length' is outside 1 to 1,048,576, the tokens",)),
    "an absurd length": (jsonl(OK | {"input_length": 50_000_000}), "mooncake", "", "", False,
                         (":1: field 'input_length' is outside 1 to",)),
    "past the server's context": (jsonl(OK, OK | {"input_length": 4000}), "mooncake", "", "",
                                  True, (":2: field 'input_length' is 4,000 tokens",
                                         "past ctx_size 2048")),
    "too many records": (jsonl(*([OK] * (trace.MAX_RECORDS + 1))), "mooncake", "", "", False,
                         (":100001: the window from record 1 holds more than 100,000 records",
                          "set trace.limit")),
    "an oversized file": ("", "mooncake", "", "", False,
                          ("is 67,108,865 bytes, over the 67,108,864",)),
    "past the level's timeout": (jsonl(OK, OK | {"timestamp": 900_000}), "mooncake", "", "",
                                 False, ("span 900.0 s at time_scale 1", "level_timeout_s = 600")),
    "levels beside the trace": (jsonl(OK), "mooncake", "", "concurrency = [1, 2]", False,
                                ("a [trace] ladder replays", "remove concurrency")),
}  # fmt: skip


def write(root: Path, case: str, shape: tuple[str | None, str, str, str, bool, tuple[str, ...]]
          ) -> Path:  # fmt: skip
    text, fmt, table, fields, launched, _ = shape
    slug = "".join(c if c.isalnum() else "-" for c in case)
    name = f"{slug}.{'csv' if fmt == 'azure' else 'jsonl'}"
    (root / "traces").mkdir(exist_ok=True)
    (root / "ladders").mkdir(exist_ok=True)
    if case == "an oversized file":
        with (root / "traces" / name).open("wb") as f:
            f.truncate(trace.MAX_TRACE_BYTES + 1)  # sparse
    elif text is not None:
        (root / "traces" / name).write_text(text)
    path = root / "ladders" / f"{slug}.toml"
    parts = LAUNCHED if launched else ATTACHED
    path.write_text(LADDER.format(fields=fields, trace=name, fmt=fmt, table=table, **parts))
    return path


def test_lint_refuses_each_malformed_trace_in_one_line_naming_line_and_field(
    tmp_path: Path,
) -> None:
    paths = {case: write(tmp_path, case, shape) for case, shape in CASES.items()}
    done = subprocess.run(
        [sys.executable, "-m", "pytest_mtpsweep.cli.main", "lint", *map(str, paths.values())],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in out, out
    for case, path in paths.items():
        mine = [ln for ln in out.splitlines() if ln.startswith(f"{path}:")]
        assert len(mine) == 1, (case, out)
        for needle in CASES[case][5]:
            # a line's fault is said as FILE:LINE: field ...: the trace file, then its line
            name = f"trace ../traces/{path.stem}.{'csv' if CASES[case][1] == 'azure' else 'jsonl'}"
            assert (name + needle if needle.startswith(":") else needle) in mine[0], mine[0]


def test_a_run_stops_at_a_malformed_trace_before_any_server_starts(
    pytester: pytest.Pytester,
) -> None:
    shape = (jsonl(OK, OK, OK | {"input_length": -3}), "mooncake", "", "", True, ())
    path = write(pytester.path, "bad", shape)
    pytester.makepyfile(test_load="def test_load(load_level):\n    assert load_level.valid\n")
    result = pytester.runpytest_subprocess(f"--ladder={path}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stdout.str() + result.stderr.str()
    hits = [ln for ln in out.splitlines() if "field 'input_length' is outside 1 to" in ln]
    assert len(hits) == 1 and hits[0].startswith(f"ERROR: {path}: trace ../traces/bad.jsonl:3:")
    assert "Traceback" not in out and "preflight" not in out
    assert not (pytester.path / "runs").exists()  # no run directory: nothing was started
