"""Ladders as values: parsing and validation of the fields, the run plan, prompt sets (the
loader that asks the registry for a kind's fields is `pytest_mtpsweep.protocol.loader`)."""

from .find import find_ladder, search_dirs
from .load import read_toml
from .prompts import Prompt, PromptSet, load_prompt_set, select
from .runplan import SessionSlot, ladder_plan, run_order_key, run_plan, session_label
from .values import Ladder, Treatment

__all__ = [
    "Ladder",
    "Prompt",
    "PromptSet",
    "SessionSlot",
    "Treatment",
    "find_ladder",
    "ladder_plan",
    "load_prompt_set",
    "read_toml",
    "run_order_key",
    "run_plan",
    "search_dirs",
    "select",
    "session_label",
]
