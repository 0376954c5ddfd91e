"""What llama-server's trace log level costs the decode rate, paired (issue 49).

Per-position acceptance ("acc per pos = (...)") is logged only at trace level (`-lv 4`; the
default is info, 3). A run turns it on only if its cost on the decode rate is within the noise,
so this measures it: sessions of the embedded model drafting with a synthetic acceptance, one at
the default level and one at trace, in pairs whose order alternates (AB, BA, AB, ...) so that a
host getting busier or quieter weighs on both alike. Each session sends the same prompts; its
rate is the mean log of the server's own decode rate (predicted_n / predicted_ms). The cost is
the mean of the pairs' differences, with a Student-t 95 % interval over the pairs.

    python bench/log_level_cost.py [--pairs 6] [--requests 8] [--max-tokens 64] [--plain]

`--plain` measures without a drafter (the trace level's other messages alone). The server and
the model are the package's (`mtpsweep provision`; MTPSWEEP_SERVER_BIN overrides the server).
Run it on a quiet host: a busy one's noise hides any cost.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_mtpsweep.analysis.stats import t_quantile
from pytest_mtpsweep.rig.provision import default_model_path, resolve_server_bin

TRACE = ("-lv", "4")  # common/log.h: LOG_LEVEL_TRACE 4, the default threshold INFO 3
PROMPTS = (
    "Write a Python function that returns the n-th Fibonacci number iteratively.",
    "Explain in three sentences why the sky is blue.",
    "Rename the variable x to count in: x = 0\nfor i in range(10):\n    x += i\nprint(x)",
    "List five prime numbers greater than 100, one per line.",
)
START_S = 180.0  # a 2-core host loads the 0.5B model in well under this
REQUEST_S = 300.0
# the trace log of one session is a few MiB; a larger one is not read for its count
MAX_LOG_BYTES = 256 * 1024 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, body: dict[str, object]) -> dict[str, object]:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=REQUEST_S) as r:
        out: dict[str, object] = json.loads(r.read(16 * 1024 * 1024))
        return out


def _wait_healthy(url: str, proc: subprocess.Popen[bytes]) -> None:
    until = time.monotonic() + START_S
    while time.monotonic() < until:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited ({proc.returncode}) before it was healthy")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"llama-server was not healthy after {START_S:.0f} s")


def session(argv: list[str], log: Path, requests: int, max_tokens: int) -> float:
    """One server session: its mean log decode rate (server clock) over `requests` requests."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as sink:
        proc = subprocess.Popen([*argv, "--port", str(port)], stdout=sink, stderr=sink)
        try:
            _wait_healthy(url, proc)
            rates = []
            for i in range(requests):
                body = {"messages": [{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}],
                        "max_tokens": max_tokens, "temperature": 0.0, "seed": 42}  # fmt: skip
                t = _post(f"{url}/v1/chat/completions", body).get("timings")
                if not isinstance(t, dict) or not t.get("predicted_ms"):
                    raise SystemExit(f"no timings in the answer to request {i + 1}")
                rates.append(math.log(float(t["predicted_n"]) / float(t["predicted_ms"])))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return statistics.fmean(rates)


def per_position_lines(log: Path) -> int:
    """How many "acc per pos" lines a session logged (0 if the log is too large to read)."""
    if log.stat().st_size > MAX_LOG_BYTES:
        return 0
    return log.read_text(errors="replace").count("acc per pos")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--plain", action="store_true", help="no drafter")
    args = ap.parse_args()
    # A SIGTERM (`timeout`, a CI's cancel) unwinds like Ctrl-C, so no server outlives the bench.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not 2 <= args.pairs <= 100 or not 1 <= args.requests <= 200:
        ap.error("--pairs must be 2..100 and --requests 1..200")
    if not 1 <= args.max_tokens <= 4096:
        ap.error("--max-tokens must be 1..4096")
    server, model = resolve_server_bin().path, default_model_path()
    base = [str(server), "-m", str(model), "--parallel", "1", "-c", "4096", "--host", "127.0.0.1"]
    if not args.plain:
        base += ["-md", str(model), "--spec-type", "draft-simple", "--spec-draft-n-max", "3",
                 "--spec-synth-rates", "0.9,0.6,0.3"]  # fmt: skip
    diffs, counted = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(args.pairs):
            order = ("default", "trace") if pair % 2 == 0 else ("trace", "default")
            got = {}
            for level in order:
                log = Path(tmp) / f"{pair}-{level}.log"
                argv = [*base, *(TRACE if level == "trace" else ())]
                got[level] = session(argv, log, args.requests, args.max_tokens)
                if level == "trace":
                    counted += per_position_lines(log)
            diffs.append(got["trace"] - got["default"])
            print(f"pair {pair + 1} ({'/'.join(order)}): {100 * math.expm1(diffs[-1]):+.2f} %")
    mean, sd = statistics.fmean(diffs), statistics.stdev(diffs)
    half = t_quantile(0.975, len(diffs) - 1) * sd / math.sqrt(len(diffs))
    low, high = 100 * math.expm1(mean - half), 100 * math.expm1(mean + half)
    print(f"trace vs default decode rate: {100 * math.expm1(mean):+.2f} % "
          f"[95 % CI {low:+.2f}, {high:+.2f}] over {len(diffs)} pairs; "
          f"{counted} 'acc per pos' lines logged at trace")  # fmt: skip
    print("within the noise (the interval holds 0)" if low <= 0 <= high else "a cost beyond noise")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
