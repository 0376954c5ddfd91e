"""Every size a load ladder can hold is bounded before anything is drawn or allocated: `mtpsweep
lint` and `pytest --ladder ... --collect-only` refuse each in one line naming the field and
the bound. They run as subprocesses under a 2 GB address-space limit and a timeout, so a bound
that regresses (a schedule of 3·10¹⁰ arrivals once grew to 24 GB) fails the test, not the host."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
AS_LIMIT = 2 * 1024**3
TIMEOUT_S = 120
LADDER = """kind = "load"
question = "q?"
baseline = "a"
{fields}
[model]
id = "m"
[server]
{server}
[[treatments]]
key = "a"
base_url = "http://127.0.0.1:9"
[[treatments]]
key = "b"
base_url = "http://127.0.0.1:10"
"""
TIMED = "duration_s = 3000\nlevel_timeout_s = 4000"
# case -> (top-level fields, [server] fields, what the one line must say)
CASES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "rate 1e7 for 3000 s (the 24 GB schedule)": (
        f"rate = [1e7]\n{TIMED}", "", ("'rate' holds 1e+07", "0.001 to 1,000,000 requests/s")),
    "rate x duration past 10**6 arrivals": (
        f"rate = [1000.0]\n{TIMED}", "",
        ("rate1000: rate × duration_s = 3,000,000 arrivals", "at most 1,000,000 per level")),
    "rate 1e300, timed": ("rate = [1e300]\nduration_s = 10", "", ("'rate' holds 1e+300",)),
    "rate 1e300, counted": ("rate = [1e300]\nrequests = 4", "", ("'rate' holds 1e+300",)),
    "rate 1e-300, counted": ("rate = [1e-300]\nrequests = 4", "", ("'rate' holds 1e-300", "0.001")),
    "rate 1e-300, timed": ("rate = [1e-300]\nduration_s = 10", "", ("'rate' holds 1e-300",)),
    "rate nan": ("rate = [nan]", "", ("'rate' is [nan]", "positive requests/s")),
    "rate inf": ("rate = [inf]", "", ("'rate' is [inf]",)),
    "a slow rate's requests outlast the timeout": (
        "rate = [0.01]\nrequests = 16", "", ("rate0.01 sends 16 requests in 1,600 s",
                                              "level_timeout_s = 600")),
    "requests 10**9 (the hanging prompt order)": (
        "concurrency = [1]\nrequests = 1000000000", "",
        ("'requests' is 1000000000", "1 to 1,000,000 requests")),
    "requests 2**62, open loop": (
        f"rate = [5.0]\nrequests = {2**62}", "", (f"'requests' is {2**62}", "1,000,000")),
    "requests past 64 bits": (
        "concurrency = [1]\nrequests = 99999999999999999999999", "", ("requests has 23 digits",
                                                                     "64-bit")),
    "concurrency 10**9": ("concurrency = [1000000000]", "", ("'concurrency' holds 1e+09",
                                                             "1 to 4096 requests in flight")),
    "100 levels": (f"concurrency = [{', '.join(map(str, range(1, 101)))}]", "",
                   ("give 100 levels", "at most 64")),
    "max_in_flight 10**9": ("rate = [5.0]\nmax_in_flight = 1000000000", "",
                            ("'max_in_flight' is 1000000000", "1 to 4096")),
    "warmup_requests 10**9": ("concurrency = [1]\nwarmup_requests = 1000000000", "",
                              ("'warmup_requests' is 1000000000", "0 to 1000")),
    "level_timeout_s 1e300": ("concurrency = [1]\nlevel_timeout_s = 1e300", "",
                              ("'level_timeout_s' is 1e+300", "at most 86400")),
    "level_timeout_s inf": ("concurrency = [1]\nlevel_timeout_s = inf", "",
                            ("'level_timeout_s' is inf", "finite")),
    "duration_s nan": ("concurrency = [1]\nduration_s = nan", "", ("'duration_s' is nan",)),
    # the fields every kind shares, through the one validation the run uses too
    "cycles 10**18": ("concurrency = [1]\ncycles = 1000000000000000000", "",
                      ("cycles is 1000000000000000000", "at most 64")),
    "seed 2**32-1 (the server's random seed)": (
        "concurrency = [1]\nseed = 4294967295", "", ("seed is 4294967295", "0 to 2147483647")),
    "ctx_size 2**40": ("concurrency = [1]", f"ctx_size = {2**40}",
                       (f"server.ctx_size is {2**40}", "at most 16777216")),
    "ready_timeout_s 1e300": ("concurrency = [1]", "ready_timeout_s = 1e300",
                              ("server.ready_timeout_s is 1e+300", "at most 86400")),
    "measurement_timeout_s 1e300": ("concurrency = [1]\nmeasurement_timeout_s = 1e300", "",
                                    ("measurement_timeout_s is 1e+300", "at most 86400")),
    "stall_threshold_s 1e300": ("concurrency = [1]\nstall_threshold_s = 1e300", "",
                                ("stall_threshold_s is 1e+300", "at most 86400")),
    "cpus 0-10**12 (a range expanded into a set)": (
        "concurrency = [1]", 'cpus = "0-1000000000000"', ("server.cpus", "ids 0 to 65535")),
    "an integer of 5000 digits": (f"concurrency = [1]\ncycles = {'9' * 5000}", "",
                                  ("an integer of thousands of digits", "64-bit")),
}  # fmt: skip
# At the bounds, and accepted: lint draws no schedule to say so.
ACCEPTED: dict[str, str] = {
    "10**6 arrivals exactly": "rate = [1000.0]\nduration_s = 1000\nlevel_timeout_s = 1100",
    "10**6 requests": "concurrency = [4096]\nrequests = 1000000\nlevel_timeout_s = 86400",
    "the slowest rate": "rate = [0.001]\nrequests = 1\nlevel_timeout_s = 86400",
}


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def run_limited(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python args` under the address-space limit: a regressed bound is a MemoryError or a
    timeout here, never the machine's memory."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=TIMEOUT_S, preexec_fn=_limited, check=False,
    )  # fmt: skip


def write_ladder(root: Path, name: str, fields: str, server: str = "") -> Path:
    (root / "prompts" / "canonical").mkdir(parents=True, exist_ok=True)
    (root / "prompts" / "canonical" / "prose_01.txt").write_text("Say hello.")
    path = root / "ladders" / f"{name}.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(LADDER.format(fields=fields, server=server))
    return path


def _slug(case: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in case)


@pytest.fixture(scope="module")
def linted(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, list[str]], str]:
    """Every case and accepted ladder through one `mtpsweep lint`: its lines by ladder file."""
    root = tmp_path_factory.mktemp("bounds")
    paths = {case: write_ladder(root, _slug(case), f, s) for case, (f, s, _) in CASES.items()}
    paths |= {case: write_ladder(root, _slug(case), f) for case, f in ACCEPTED.items()}
    done = run_limited(["-m", "pytest_mtpsweep.cli.main", "lint", *map(str, paths.values())], root)
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in out, out
    lines = {case: [ln for ln in out.splitlines() if ln.startswith(f"{p}:")]
             for case, p in paths.items()}  # fmt: skip
    return lines, out


@pytest.mark.parametrize("case", list(CASES))
def test_lint_refuses_each_size_in_one_line_naming_field_and_bound(
    linted: tuple[dict[str, list[str]], str], case: str
) -> None:
    lines, out = linted
    assert len(lines[case]) == 1, out  # one problem, on one line
    for needle in CASES[case][2]:
        assert needle in lines[case][0], lines[case][0]


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_a_ladder_at_the_bounds_passes(linted: tuple[dict[str, list[str]], str], case: str) -> None:
    lines, out = linted
    assert len(lines[case]) == 1 and ": ok (load" in lines[case][0], out


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        (f"rate = [1e7]\n{TIMED}", "'rate' holds 1e+07"),
        ("concurrency = [1]\nrequests = 1000000000", "'requests' is 1000000000"),
    ],
)
def test_collect_only_refuses_the_same_ladder_as_a_usage_error(
    tmp_path: Path, fields: str, says: str
) -> None:
    path = write_ladder(tmp_path, "big", fields)
    done = run_limited(
        ["-m", "pytest", f"--ladder={path}", "--collect-only", "-q", "-p", "no:cacheprovider"],
        tmp_path,
    )
    out = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    hits = [ln for ln in out.splitlines() if says in ln]
    assert len(hits) == 1 and hits[0].startswith(f"ERROR: {path}: "), out
