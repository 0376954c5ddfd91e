"""GPU memory through NVML, for the memory witnesses; None wherever there is no NVIDIA driver."""

from __future__ import annotations

import contextlib
from typing import Any


def _nvml() -> Any | None:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no library, no driver, no device: all mean "no GPU to witness"
        return None
    return pynvml


def used_mib() -> int | None:
    """Memory in use summed over all NVIDIA GPUs, in MiB; None without a driver."""
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        total = 0
        for i in range(nvml.nvmlDeviceGetCount()):
            info = nvml.nvmlDeviceGetMemoryInfo(nvml.nvmlDeviceGetHandleByIndex(i))
            total += int(info.used)
        return total // 2**20
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
