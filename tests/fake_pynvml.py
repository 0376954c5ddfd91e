"""A stand-in for pynvml: only the calls preflight's GPU check and the energy reading make,
answered from fixed data.

It exists to test how preflight reads and words GPU information on machines without a GPU;
it knows nothing about real NVML beyond those calls' shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace


class NVMLError(Exception):
    """Raised like pynvml.NVMLError."""


@dataclass
class FakeGpu:
    """One pretend GPU."""

    name: str | bytes = "NVIDIA Fake 100"
    used: int = 512 * 2**20
    total: int = 80 * 2**30
    util: int | None = 3
    pids: list[int] = field(default_factory=list)
    energy_mj: int | None = None  # None: the board has no energy counter (pre-Volta)


class FakeNvml:
    """Answers like pynvml for the listed GPUs; records init/shutdown and refuses misuse."""

    NVMLError = NVMLError

    def __init__(
        self,
        gpus: list[FakeGpu],
        *,
        driver: str | bytes = "550.54.15",
        init_error: bool = False,
        lost: bool = False,
    ) -> None:
        self.gpus = gpus
        self.driver = driver
        self.init_error = init_error
        self.lost = lost
        self.initialised = False
        self.shutdowns = 0

    def _live(self) -> None:
        if not self.initialised:
            raise NVMLError("Uninitialized")

    def nvmlInit(self) -> None:
        if self.init_error:
            raise NVMLError("NVML Shared Library Not Found")
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self._live()
        self.initialised = False
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str | bytes:
        self._live()
        return self.driver

    def nvmlDeviceGetCount(self) -> int:
        self._live()
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._live()
        if self.lost:
            raise NVMLError("GPU is lost")
        return index

    def nvmlDeviceGetName(self, handle: int) -> str | bytes:
        self._live()
        return self.gpus[handle].name

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        self._live()
        gpu = self.gpus[handle]
        return SimpleNamespace(used=gpu.used, total=gpu.total, free=gpu.total - gpu.used)

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> SimpleNamespace:
        self._live()
        util = self.gpus[handle].util
        if util is None:
            raise NVMLError("Not Supported")
        return SimpleNamespace(gpu=util, memory=0)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[SimpleNamespace]:
        self._live()
        return [SimpleNamespace(pid=pid, usedGpuMemory=2**30) for pid in self.gpus[handle].pids]

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:
        self._live()
        mj = self.gpus[handle].energy_mj
        if mj is None:
            raise NVMLError("Not Supported")
        return mj
