"""``gpujobqueue check``: :func:`gather_facts` reads the machine; :func:`judge` and :func:`report` judge any facts,
so that the judgement is tested without the machine."""

from .facts import MachineFacts, gather_facts
from .findings import Finding
from .judge import judge, report
from .probes import Package

__all__ = ["Finding", "MachineFacts", "Package", "gather_facts", "judge", "report"]
