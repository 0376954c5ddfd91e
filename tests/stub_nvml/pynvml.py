"""A STAND-IN for pynvml (nvidia-ml-py), put first on PYTHONPATH of a subprocess run: one
pretend GPU whose total-energy counter grows at a fixed power (MTPSWEEP_STUB_NVML_WATTS, default
150 W) with the monotonic clock. It exists to test the load kind's energy per token on a host
without a GPU; it knows nothing of real NVML beyond these calls' shapes."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace
from typing import Any


class NVMLError(Exception):
    """Raised like pynvml.NVMLError."""


def nvmlInit() -> None:
    return None


def nvmlShutdown() -> None:
    return None


def nvmlSystemGetDriverVersion() -> str:
    return "000.00 (stand-in)"


def nvmlDeviceGetCount() -> int:
    return 1


def nvmlDeviceGetHandleByIndex(index: int) -> int:
    if index != 0:
        raise NVMLError("Invalid Argument")
    return index


def nvmlDeviceGetName(handle: Any) -> str:
    return "Stand-in GPU"


def nvmlDeviceGetMemoryInfo(handle: Any) -> SimpleNamespace:
    return SimpleNamespace(used=2**30, total=80 * 2**30, free=79 * 2**30)


def nvmlDeviceGetUtilizationRates(handle: Any) -> SimpleNamespace:
    return SimpleNamespace(gpu=0, memory=0)


def nvmlDeviceGetComputeRunningProcesses(handle: Any) -> list[SimpleNamespace]:
    return []


def nvmlDeviceGetTotalEnergyConsumption(handle: Any) -> int:
    watts = float(os.environ.get("MTPSWEEP_STUB_NVML_WATTS", "150"))
    return int(time.monotonic() * watts * 1000.0)  # mJ
