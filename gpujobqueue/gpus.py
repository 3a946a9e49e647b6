"""Which NVIDIA GPUs this machine has (NVML, else nvidia-smi)."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess


def nvidia_gpu_ids() -> list[str]:
    """Indices of the NVIDIA GPUs visible here, honouring CUDA_VISIBLE_DEVICES.

    Returns an empty list on a machine without NVIDIA GPUs or drivers.
    """
    count = _machine_gpu_count()
    if not count:
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d for d in (x.strip() for x in visible.split(",")) if d][:count]
    return [str(i) for i in range(count)]


@functools.lru_cache(maxsize=1)
def _machine_gpu_count() -> int:
    """The machine's NVIDIA GPUs, looked up once per process (NVML, else nvidia-smi)."""
    count = _nvml_count()
    if count is None:
        count = _nvidia_smi_count()
    return count or 0


def _nvml_count() -> int | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # NVMLError and its subclasses: no driver, no device
        return None


def _nvidia_smi_count() -> int | None:
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


@functools.lru_cache(maxsize=1)
def nvlink_between_gpus() -> bool:
    """Whether this machine's NVIDIA GPUs are joined by NVLink (``nvidia-smi topo -m`` shows NV#)."""
    if _machine_gpu_count() < 2 or shutil.which("nvidia-smi") is None:
        return False
    try:
        out = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(re.fullmatch(r"NV\d+", cell) for line in out.splitlines() if line.startswith("GPU") for cell in line.split()[1:])
