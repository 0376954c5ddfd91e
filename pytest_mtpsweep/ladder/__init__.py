"""Ladders: loading and validation, the run plan, prompt sets."""

from .find import find_ladder, search_dirs
from .load import load_ladder, read_toml
from .model import Ladder, Treatment
from .plan import SessionSlot, run_order_key, run_plan, session_label
from .prompts import Prompt, load_prompt_set, select
from .prompts import digest as prompt_digest

__all__ = [
    "Ladder",
    "Prompt",
    "SessionSlot",
    "Treatment",
    "find_ladder",
    "load_ladder",
    "load_prompt_set",
    "prompt_digest",
    "read_toml",
    "run_order_key",
    "run_plan",
    "search_dirs",
    "select",
    "session_label",
]
