"""The door's ladder side: a ladder as frozen values, the field specs and checks a kind's
`KindSpec` is written with, server configurations, the plan's slots and the prompt sets."""

from __future__ import annotations

from ..ladder import Prompt, PromptSet, SessionSlot
from ..ladder.fields import Spec, check_key, check_table, str_list
from ..ladder.load import parse_treatments
from ..ladder.prompts import read_text_file
from ..ladder.values import Ladder, Preregistration, Treatment

__all__ = [  # noqa: RUF022 -- grouped as docs/architecture/10-front-door.md lists them
    # a ladder as frozen values
    "Ladder",
    "Treatment",
    "Preregistration",
    "SessionSlot",
    # fields and their checks
    "Spec",
    "check_table",
    "check_key",
    "str_list",
    "parse_treatments",
    # prompts
    "Prompt",
    "PromptSet",
    "read_text_file",
]
