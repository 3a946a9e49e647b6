"""Which NVIDIA GPUs this machine has (NVML, else nvidia-smi)."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any


def nvidia_gpu_ids() -> list[str]:
    """Indices of the NVIDIA GPUs visible here, honouring CUDA_VISIBLE_DEVICES; none without NVIDIA GPUs or drivers."""
    count = len(machine_gpus().gpus)
    if not count:
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d for d in (x.strip() for x in visible.split(",")) if d][:count]
    return [str(i) for i in range(count)]


@dataclass(frozen=True)
class GPU:
    """One NVIDIA GPU as NVML (or nvidia-smi) reports it."""

    index: int
    name: str
    memory_bytes: int | None = None
    active_nvlinks: int | None = None


@dataclass(frozen=True)
class MachineGPUs:
    """The machine's NVIDIA GPUs, where they were read, and why none were, if none were."""

    gpus: tuple[GPU, ...]
    source: str | None
    error: str | None
    driver_version: str | None
    cuda_driver_version: str | None


@functools.lru_cache(maxsize=1)
def machine_gpus() -> MachineGPUs:
    """The machine's NVIDIA GPUs, looked up once per process: NVML, else ``nvidia-smi``; CUDA_VISIBLE_DEVICES is
    not applied here (:func:`nvidia_gpu_ids` applies it)."""
    try:
        import pynvml
    except ImportError:
        pynvml = None
    error = "nvidia-ml-py not installed" if pynvml is None else None
    if pynvml is not None:
        try:
            pynvml.nvmlInit()
        except Exception as nvml_error:  # NVMLError subclasses: no driver, no library
            error = f"NVML: {nvml_error}"
        else:
            try:
                return _nvml_gpus(pynvml)
            except Exception as nvml_error:  # a device NVML lists but cannot read
                error = f"NVML: {nvml_error}"
            finally:
                pynvml.nvmlShutdown()
    return _nvidia_smi_gpus(error)


def _nvml_gpus(pynvml: Any) -> MachineGPUs:
    def text(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    gpus = []
    for index in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        links = 0
        for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
            try:
                links += bool(pynvml.nvmlDeviceGetNvLinkState(handle, link))
            except Exception:  # NVML_ERROR_NOT_SUPPORTED or INVALID_ARGUMENT past the last link
                break
        gpus.append(
            GPU(index, text(pynvml.nvmlDeviceGetName(handle)), int(pynvml.nvmlDeviceGetMemoryInfo(handle).total), links)
        )
    cuda = pynvml.nvmlSystemGetCudaDriverVersion()
    return MachineGPUs(
        tuple(gpus), "NVML", None, text(pynvml.nvmlSystemGetDriverVersion()), f"{cuda // 1000}.{cuda % 1000 // 10}"
    )


def _nvidia_smi_gpus(error: str | None) -> MachineGPUs:
    if shutil.which("nvidia-smi") is None:
        return MachineGPUs((), None, error, None, None)
    out, smi_error = _smi("--query-gpu=index,name,memory.total,driver_version", "--format=csv,noheader,nounits")
    if smi_error is not None:
        return MachineGPUs((), None, f"{error}; nvidia-smi: {smi_error}", None, None)
    rows = [[cell.strip() for cell in line.split(",")] for line in out.splitlines() if line.strip()]
    gpus = tuple(GPU(int(index), name, int(float(memory)) * 2**20) for index, name, memory, _ in rows)
    return MachineGPUs(gpus, "nvidia-smi", None, rows[0][3] if rows else None, _smi_cuda_version() if rows else None)


def _smi(*args: str) -> tuple[str, str | None]:
    """What ``nvidia-smi`` with ``args`` prints, and why it could not run or failed ("" and why)."""
    try:
        done = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as error:
        return "", str(error)
    return done.stdout, None


def _smi_cuda_version() -> str | None:
    """The driver's CUDA version from ``nvidia-smi``'s banner (``CUDA Version: 13.0``)."""
    found = re.search(r"CUDA Version:\s*(\d+\.\d+)", _smi()[0])
    return found.group(1) if found else None


@functools.lru_cache(maxsize=1)
def nvlink_between_gpus() -> bool:
    """Whether this machine's NVIDIA GPUs are joined by NVLink (``nvidia-smi topo -m`` shows NV#)."""
    out = _smi("topo", "-m")[0] if len(machine_gpus().gpus) > 1 else ""
    return any(
        re.fullmatch(r"NV\d+", cell) for line in out.splitlines() if line.startswith("GPU") for cell in line.split()[1:]
    )
