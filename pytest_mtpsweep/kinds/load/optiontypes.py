"""The load kind's option types: what its declaration's `Opt`s parse their text with. Cheap:
every pytest process of the environment imports the declaration, and with it this module."""

from __future__ import annotations

import argparse
import math


def seconds(text: str) -> float:
    """A finite number of seconds (`--load-duration`)."""
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number of seconds")
    return value
