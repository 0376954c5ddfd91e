"""The door's ladder side: a ladder as frozen values, the field specs and checks a kind's
`KindSpec` is written with, server configurations, the plan's slots and the prompt sets."""

from __future__ import annotations

from ..ladder import Prompt, SessionSlot, prompt_digest
from ..ladder.fields import Spec, check_key, check_table, parse_contrast, str_list
from ..ladder.load import parse_treatments
from ..ladder.model import (
    MAX_CYCLES,
    MAX_TIMEOUT_S,
    AnalysisConfig,
    Ladder,
    Preregistration,
    Treatment,
)
from ..ladder.prompts import ladder_prompts, read_text_file, session_order

__all__ = [
    "MAX_CYCLES",
    "MAX_TIMEOUT_S",
    "AnalysisConfig",
    "Ladder",
    "Preregistration",
    "Prompt",
    "SessionSlot",
    "Spec",
    "Treatment",
    "check_key",
    "check_table",
    "ladder_prompts",
        "parse_contrast",
    "parse_treatments",
    "prompt_digest",
    "read_text_file",
        "session_order",
    "str_list",
]  # fmt: skip
