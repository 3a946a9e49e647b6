"""Site facts that change how a job is written (:func:`apply_site_flags`): the account option, no memory."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Mapping

from ..errors import ValidationError
from ..jobs.request import JobRequest
from ..settings.keywords import MEMORY_KEYWORDS
from .facts import Site

# A directive line that asks SLURM for memory (--mem, --mem-per-cpu, --mem-per-gpu; not --mem-bind).
_MEMORY_DIRECTIVE = re.compile(r"\s*--mem(-per-(cpu|gpu))?(=|\s|$)")


def apply_site_flags(site: Site, queue: str | None, request: JobRequest, explicit: Mapping[str, Any]) -> JobRequest:
    """The request made for ``site``'s ``queue`` (None: its default), as its batch system must receive it; a
    ValidationError where ``explicit`` keywords or a ``--mem`` directive ask for memory a site refuses."""
    data = site.data
    node = site.node(queue or data["default_queue"])
    if node.get("memory_request") is False:
        asked = [name for name in MEMORY_KEYWORDS if explicit.get(name) is not None]
        why = node.get("memory_request_refused") or "its scheduler refuses a job that asks for memory"
        if any(_MEMORY_DIRECTIVE.match(line) for line in request.job_extra_directives):
            raise ValidationError(
                "job_extra_directives",
                f"{site.name} takes no memory request ({why}); leave the --mem line out: each job gets its "
                "nodes' memory",
            )
        if asked:
            raise ValidationError(
                asked[0],
                f"{site.name} takes no memory request ({why}); leave {asked[0]} out: each job gets its nodes' "
                "memory, and the workers size themselves by their share of it",
            )
        # The site's own memory_per_gpu still sized the workers (the launch); the header asks for none.
        request = dataclasses.replace(request, memory_per_node=None)
    return dataclasses.replace(request, account_flag=data.get("account", {}).get("flag"))
