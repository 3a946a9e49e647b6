"""The code that job scripts load into the workers (and into a job's scheduler) with distributed's preloads, by
module name, as dask-cuda preloads its own plugins (:mod:`.watchdog`, :mod:`.pin_device`, :mod:`.nic_affinity`):
the workers' python must import gpujobqueue (:func:`gpujobqueue.machine.install.worker_python_problems`). Each
module uses the standard library (and distributed) alone and imports nothing of gpujobqueue, so that
``gpujobqueue render --standalone`` can write it whole into the job's private folder and preload it by path.
This ``__init__`` imports none of them.
"""

from __future__ import annotations

from pathlib import Path

WATCHDOG = "watchdog"
PIN_DEVICE = "pin_device"
NIC_AFFINITY = "nic_affinity"
PRELOADS = (WATCHDOG, PIN_DEVICE, NIC_AFFINITY)
# Not a preload: the file a job runs Python 3.10 through, which has no -P (safe_path.py says how).
SAFE_PATH = "safe_path"


def module_name(preload: str) -> str:
    """The name workers preload ``preload`` by: ``gpujobqueue.preloads.<preload>``."""
    return f"{__name__}.{preload}"


def standalone_file_name(preload: str) -> str:
    """The file ``--standalone`` writes ``preload`` to. distributed imports a preload file as the module
    its name says: ``gpujobqueue_watchdog``, never a ``watchdog`` package the workers also import."""
    return f"gpujobqueue_{preload}.py"


def source(preload: str) -> str:
    """The text of the module ``preload``, as ``--standalone`` writes it into the job."""
    if preload not in (*PRELOADS, SAFE_PATH):
        raise ValueError(f"{preload!r} is not one of gpujobqueue's preloads: {', '.join(PRELOADS)}")
    return (Path(__file__).parent / f"{preload}.py").read_text()
