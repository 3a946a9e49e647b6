"""``HandWrittenDirectives``: what a batch system makes of the directives users write by hand in its syntax
(``job_extra_directives``, ``resource_spec``); each class method's default is a batch system's that reads none."""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Mapping

from ..settings.walltimes import parse_walltime
from .directives import DirectiveForm
from .gpu_parsers import HandWrittenGPUs


class HandWrittenDirectives:
    """The hooks of a batch system (:class:`~gpujobqueue.batch.base.BatchSystem`) for its users' own lines."""

    #: The settings its directives set that users also write by hand (its walltime option; SLURM's
    #: ``--nodes``): read from ``job_extra_directives`` by :func:`gpujobqueue.handwritten.directives.adopt`.
    directive_forms: ClassVar[tuple[DirectiveForm, ...]] = ()
    #: The GPU request in one of its users' own directive lines, ``(field_name, text, nodes)``; None: it reads none.
    gpu_directive_parser: ClassVar[Callable[[str, str, int], HandWrittenGPUs | None] | None] = None

    @classmethod
    def walltime_seconds(cls, value: Any) -> int:
        """The seconds of a ``walltime`` keyword's value (a bare number in its ``walltime_number_unit``)."""
        return parse_walltime("walltime", value, cls.walltime_number_unit)

    @classmethod
    def parse_gpu_directive(
        cls, field_name: str, text: str, nodes: int, settings: Mapping[str, Any]
    ) -> HandWrittenGPUs | None:
        """The GPU request of one of the user's own directive lines in its syntax (:attr:`gpu_directive_parser`)."""
        return cls.gpu_directive_parser and cls.gpu_directive_parser(field_name, text, nodes)

    @classmethod
    def parse_gpu_resource_spec(cls, text: str, settings: Mapping[str, Any]) -> HandWrittenGPUs | None:
        """The GPU request in a ``resource_spec`` it reads, or None."""
        return None

    @classmethod
    def gpu_line(cls, style: str, count: int, settings: Mapping[str, Any]) -> str | None:
        """The GPU request it writes in ``style`` for ``count`` GPUs per node (``job_directives_skip`` may drop it)."""
        return None

    @classmethod
    def check_hand_written(cls, found: HandWrittenGPUs, settings: Mapping[str, Any]) -> None:
        """Refuse a hand-written request that its own settings make mean something else."""

    @classmethod
    def keep_hand_written(
        cls, found: HandWrittenGPUs, settings: dict[str, Any], style: str | None, skipped: bool
    ) -> bool:
        """Make the hand-written line the job's request where the generated one could not say as much (``settings``
        in place; ``style``: the ``gpu_request`` given; ``skipped``: the generated one is left out); whether it did.
        By default a line that ``keeps_line`` stays and none is generated (sbatch and bsub keep the last they read)."""
        if skipped or not found.keeps_line or style not in (None, found.style):
            return False
        settings["gpu_request"] = "none"
        return True
