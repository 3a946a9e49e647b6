"""The :class:`Site`: one machine's facts merged from its files, with where each value came from."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..jobs.usage import Charge
from .charges import queue_charge
from .errors import QueueRefusedError, SiteConfigError


@dataclass
class Site:
    """One machine's facts: ``data`` merged from ``files``; ``origins`` and ``lines``, where each key is set."""

    name: str
    data: dict
    files: list[str]
    origins: dict[tuple, tuple[str, int]] = field(default_factory=dict)
    lines: dict[str, dict[tuple, int]] = field(default_factory=dict)

    def location(self, *key: str) -> tuple[str, int | None]:
        """(file, line) of a key, or of the mapping that holds it; else the base file."""
        for length in range(len(key), 0, -1):
            if key[:length] in self.origins:
                return self.origins[key[:length]]
            for path, (file, _) in self.origins.items():
                if path[:length] == key[:length]:
                    return file, self.lines.get(file, {}).get(key[:length])
        return self.files[0], None

    def where(self, *key: str) -> str:
        """``file:line`` of a key (for error messages), or the file alone."""
        file, line = self.location(*key)
        return f"{file}:{line}" if line else file

    @property
    def scheduler(self) -> str:
        return self.data["scheduler"]

    @property
    def open_queues(self) -> dict[str, dict]:
        """The queues a job may go to: ``queues`` but those ``removed_queues`` names."""
        removed = self.data.get("removed_queues") or {}
        return {name: entry for name, entry in self.data["queues"].items() if name not in removed}

    def queue(self, name: str) -> dict:
        """The queue's entry; raises naming the site file where it has none, or the centre removed it."""
        removed = (self.data.get("removed_queues") or {}).get(name)
        if removed is not None:
            path, line = self.location("removed_queues", name)
            raise QueueRefusedError(
                path,
                f"removed_queues.{name}",
                line,
                f"{self.name}: the centre withdrew the {name} queue ({removed['date']}): "
                f"{removed['words']!r} ({removed['source']}); name none (the site picks one that takes "
                f"the job) or one of its queues: {', '.join(self.open_queues)}",
                "queue",
            )
        queues = self.data["queues"]
        if name not in queues:
            path, line = self.location("queues")
            raise SiteConfigError(
                path, "queues", line, f"{self.name} has no queue {name!r}; its queues are {', '.join(queues)}"
            )
        return queues[name]

    def node(self, queue: str) -> dict:
        """The node facts of a queue's nodes: the site's ``node`` with the queue's ``node`` over it."""
        return {**self.data["node"], **self.queue(queue).get("node", {})}

    def worker(self, queue: str) -> dict:
        """The worker settings for a queue: the site's ``worker`` with the queue's over it."""
        return {**self.data["worker"], **self.queue(queue).get("worker", {})}

    def charge(self, queue: str) -> Charge | None:
        """How a job in ``queue`` is charged: the queue's ``charge``, else the site's, else None."""
        self.queue(queue)
        return queue_charge(self.data, queue)

    def key_of(self, queue: str, section: str, key: str) -> tuple:
        """The key path that sets ``section.key`` for a queue: the queue's own, or the site's."""
        if key in self.queue(queue).get(section, {}):
            return ("queues", queue, section, key)
        return (section, key)
