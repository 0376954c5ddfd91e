"""NVIDIA GPUs through NVML (pynvml): memory in use, energy used, and what preflight reports of
each GPU.

Without the library or a driver every reading is None: there is no GPU to witness.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any, Protocol

import psutil


class NvmlApi(Protocol):
    """The part of pynvml that the package uses."""

    @property
    def NVMLError(self) -> type[Exception]: ...

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlSystemGetDriverVersion(self) -> str | bytes: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...
    def nvmlDeviceGetName(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any: ...
    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Any: ...
    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[Any]: ...
    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Any) -> int: ...


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as NVML reports it."""

    index: int
    name: str
    used_mib: int
    total_mib: int
    util_pct: int | None
    processes: tuple[str, ...]


def load_nvml() -> NvmlApi | None:
    """The pynvml module, or None when it is not installed."""
    try:
        import pynvml
    except ImportError:
        return None
    nvml: NvmlApi = pynvml
    return nvml


def used_mib(nvml: NvmlApi | None = None) -> int | None:
    """Memory in use summed over all NVIDIA GPUs, in MiB; None without a driver."""
    nvml = nvml if nvml is not None else load_nvml()
    if nvml is None:
        return None
    try:
        nvml.nvmlInit()
    except Exception:  # no library, no driver, no device: all mean "no GPU to witness"
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


@dataclass(frozen=True)
class Energy:
    """NVML's energy counters summed over some GPUs (mJ since the driver loaded), or why not."""

    mj: int | None
    scope: str  # "GPU 0, 1" — or, without a reading, the reason in one phrase

    @classmethod
    def read(cls, indices: tuple[int, ...] | None = None, nvml: NvmlApi | None = None) -> Energy:
        """The summed total-energy counter of the GPUs `indices` (None: every GPU NVML sees)."""
        nvml = nvml if nvml is not None else load_nvml()
        if nvml is None:
            return cls(None, "nvidia-ml-py is not installed")
        try:
            nvml.nvmlInit()
        except Exception:
            return cls(None, "no NVIDIA driver or GPU through NVML on this host")
        try:
            chosen = indices if indices is not None else tuple(range(nvml.nvmlDeviceGetCount()))
            if not chosen:
                return cls(None, "NVML sees no GPU")
            total = 0
            for i in chosen:
                total += int(
                    nvml.nvmlDeviceGetTotalEnergyConsumption(nvml.nvmlDeviceGetHandleByIndex(i))
                )
            return cls(total, "GPU " + ", ".join(map(str, chosen)))
        except Exception as exc:  # a pre-Volta board has no counter: no reading, said once
            return cls(None, f"NVML gives no energy counter ({text(str(exc))[:80]})")
        finally:
            with contextlib.suppress(Exception):
                nvml.nvmlShutdown()


def read_gpu(nvml: NvmlApi, index: int) -> GpuInfo:
    """One GPU's name, memory, utilisation and the other compute processes on it."""
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    return GpuInfo(
        index=index,
        name=text(nvml.nvmlDeviceGetName(handle)),
        used_mib=int(memory.used) // 2**20,
        total_mib=int(memory.total) // 2**20,
        util_pct=_gpu_util(nvml, handle),
        processes=tuple(
            describe_pid(int(p.pid))
            for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)
            if int(p.pid) != os.getpid()
        ),
    )


def _gpu_util(nvml: NvmlApi, handle: Any) -> int | None:
    # Some boards do not report utilisation; that alone is no reason to stop a run.
    try:
        return int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
    except nvml.NVMLError:
        return None


def text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def describe_pid(pid: int) -> str:
    try:
        return f"pid {pid} ({psutil.Process(pid).name()})"
    except psutil.Error:
        return f"pid {pid}"
