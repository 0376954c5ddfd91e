"""The door's rig: requests to a server as a kind makes them. One streamed request
(`stream_chat`), a non-streamed chat turn, bounded reads, a process's end in words, the GPU's
energy counter, vLLM's counters, and the load client (`loadgen`: schedules, levels,
conversations, summaries)."""

from __future__ import annotations

from ..rig import stream_chat
from ..rig.bounds import ReadBound, fetch
from ..rig.build import cpu_key
from ..rig.chat import ChatReply, ChatSpec, RetryPolicy, chat, redact
from ..rig.exits import describe_exit, exit_of, signal_words
from ..rig.gpu import Energy, energy_mj
from ..rig.loadgen.arrivals import (
    MAX_RATE,
    MAX_SCHEDULE,
    MIN_RATE,
    NS_PER_S,
    first_arrival_ns,
    poisson_schedule,
    poisson_until,
    prompt_order,
)
from ..rig.loadgen.chatlevel import Conversations, TurnFacts, run_conversations
from ..rig.loadgen.level import ClosedLoop, LevelRun, OpenLoop, run_level
from ..rig.loadgen.payload import LoadPrompt, LoadSpec, LoadTarget, PromptLike, is_loopback
from ..rig.loadgen.reads import StreamRecord
from ..rig.loadgen.summary import LevelSummary, Percentiles, Slo, summarise
from ..rig.specmetrics import parse_samples

__all__ = [  # noqa: RUF022 -- grouped by what a kind does, not sorted
    "cpu_key",
    "stream_chat", "ReadBound", "fetch", "ChatReply", "ChatSpec", "RetryPolicy", "chat",
    "redact", "describe_exit", "exit_of", "signal_words", "Energy", "energy_mj",
    "parse_samples",
    # the load client
    "MAX_RATE", "MAX_SCHEDULE", "MIN_RATE", "NS_PER_S", "first_arrival_ns", "poisson_schedule",
    "poisson_until", "prompt_order", "Conversations", "TurnFacts", "run_conversations",
    "ClosedLoop", "LevelRun", "OpenLoop", "run_level", "LoadPrompt", "LoadSpec", "LoadTarget",
    "PromptLike", "is_loopback", "StreamRecord", "LevelSummary", "Percentiles", "Slo",
    "summarise",
]  # fmt: skip
