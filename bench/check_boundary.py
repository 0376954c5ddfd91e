"""What the grader/candidate boundary costs per check, on the demo's eight tasks.

Each task's checker is run on a correct reference solution, `--repeats` times, three ways:
`isolated` (the default: grader and candidate in two jails, every call crossing as data),
`in-process` (one jail, the artefact inside the grader: forgeable, what a task gets with
`checking = "in-process"`), and, where the tree has it, the check as it was before the boundary
(point PYTHONPATH at a checkout of that commit: its `run_check` has no `in_process`, and the
script times it as `single-jail`). Prints the median and p90 per way and the ratio of medians.

    python bench/check_boundary.py [--repeats 5]
    PYTHONPATH=/path/to/old-checkout python bench/check_boundary.py   # the old check
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import time
from pathlib import Path

from pytest_mtpsweep.kinds.authoring.ladder import CheckerLimits
from pytest_mtpsweep.kinds.authoring.sandbox import run_check

TASKS = Path(__file__).resolve().parents[1] / "experiments" / "authoring" / "tasks"
SOLUTIONS = {
    "t1_clamp": "def clamp(x, lo, hi):\n    if lo > hi:\n        raise ValueError('range')\n"
    "    return max(lo, min(hi, x))\n",
    "t2_length": "def longest_word_length(s):\n"
    "    return max((len(w) for w in s.split()), default=0)\n",
    "t3_palindrome": "def is_palindrome(s):\n    t = [c.lower() for c in s if c.isalnum()]\n"
    "    return t == t[::-1]\n",
    "t4_count_zeros": "def count_zeros(xs):\n    return sum(1 for x in xs if x == 0)\n",
    "t5_run_length": "def run_length(s):\n    import itertools\n"
    "    return ''.join(f'{k}{len(list(g))}' for k, g in itertools.groupby(s))\n",
    "t6_roman": "def to_roman(n):\n    if not 0 < n < 4000:\n        raise ValueError(n)\n"
    "    out = ''\n"
    "    for v, s in ((1000,'M'),(900,'CM'),(500,'D'),(400,'CD'),(100,'C'),(90,'XC'),(50,'L'),"
    "(40,'XL'),(10,'X'),(9,'IX'),(5,'V'),(4,'IV'),(1,'I')):\n"
    "        while n >= v:\n            out += s\n            n -= v\n    return out\n",
    "t7_merge": "def merge_intervals(xs):\n    out = []\n    for a, b in sorted(xs):\n"
    "        if out and a <= out[-1][1]:\n            out[-1] = (out[-1][0], max(out[-1][1], b))\n"
    "        else:\n            out.append((a, b))\n    return out\n",
    "t8_brackets": "def balanced(s):\n    pairs = {')': '(', ']': '[', '}': '{'}\n    st = []\n"
    "    for c in s:\n        if c in '([{':\n            st.append(c)\n"
    "        elif c in pairs:\n            if not st or st.pop() != pairs[c]:\n"
    "                return False\n    return not st\n",
}


def time_checks(way: str, repeats: int, limits: CheckerLimits) -> list[float]:
    times = []
    for _ in range(repeats):
        for task, solution in SOLUTIONS.items():
            files = {
                "solution.py": solution,
                "checker.py": (TASKS / task / "checker.py").read_text(),
            }
            t0 = time.monotonic()
            if way == "single-jail":
                c = run_check(files, "checker.py", limits)
            else:
                c = run_check(files, "checker.py", limits, in_process=way == "in-process")
            times.append(time.monotonic() - t0)
            if c.verdict != "pass":
                raise SystemExit(f"{way}: {task}'s reference solution did not pass:\n{c.output}")
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    limits = CheckerLimits()
    new = "in_process" in inspect.signature(run_check).parameters
    ways = ["isolated", "in-process"] if new else ["single-jail"]
    medians = {}
    for way in ways:
        t = sorted(time_checks(way, args.repeats, limits))
        medians[way] = statistics.median(t)
        p90 = t[int(0.9 * (len(t) - 1))]
        print(f"{way:12} {len(t):4} checks  median {medians[way] * 1000:7.1f} ms  "
              f"p90 {p90 * 1000:7.1f} ms")  # fmt: skip
    if len(medians) == 2:
        print(f"isolated / in-process (medians): {medians['isolated'] / medians['in-process']:.2f}")


if __name__ == "__main__":
    main()
