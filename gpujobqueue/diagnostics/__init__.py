"""``gpujobqueue check``: what this machine has for GPU workers, and what is missing.

:func:`gather_facts` (:mod:`.facts`, reading the machine through :mod:`.probes`) reads the
machine (NVML, packages, UCX, network, batch commands, the site) without judging;
:func:`judge` (:mod:`.judge`) turns the facts into findings, each with the fix where something
needed is missing; :func:`report` (:mod:`.report`) writes them as text. Keeping the facts and
the judgement apart lets the judgement be tested on any facts.
"""

from .facts import MachineFacts, gather_facts
from .judge import Finding, judge
from .probes import Package
from .report import report

__all__ = ["Finding", "MachineFacts", "Package", "gather_facts", "judge", "report"]
