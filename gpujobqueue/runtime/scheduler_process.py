"""The cluster's side of ``scheduler="job"``: the scheduler's job, and that job's own GPU workers."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any, Callable

from distributed.deploy.spec import ProcessInterface

from ..jobs.scheduler_job import SchedulerStart, read_scheduler_address
from ..security.owned_folders import ClusterFolder
from .job import GPUJob

logger = logging.getLogger(__name__)


class JobScheduler(ProcessInterface):
    """The cluster's scheduler in its first batch job, its address read through the cluster's ``folder`` as made."""

    poll_interval = 0.2
    state_interval = 5.0

    def __init__(
        self,
        *,
        make_job: Callable[[SchedulerStart], GPUJob],
        scheduler_file: str,
        folder: ClusterFolder | None = None,
        tls_args: tuple[str, ...] = (),
        worker_saturation: str | None = None,
        dashboard: bool = False,
        dashboard_address: str | None = None,
        **scheduler_options: Any,
    ):
        super().__init__()
        self.scheduler_file, self.folder = scheduler_file, folder
        start = SchedulerStart(
            scheduler_file=scheduler_file,
            dashboard_address=dashboard_address if dashboard else None,
            tls_args=tuple(tls_args),
            worker_saturation=worker_saturation,
        )
        self.job = make_job(start)

    async def start(self) -> None:
        await self.job.start()
        logger.info(
            "scheduler job %s submitted; waiting for its scheduler file %s", self.job.job_id, self.scheduler_file
        )
        self.address = await self._wait_for_address()
        self.external_address = self.address
        logger.info("scheduler of job %s at %s", self.job.job_id, self.address)
        await super().start()

    async def _wait_for_address(self) -> str:
        # No time limit: a job may queue for hours; it fails only once the batch system has ended it.
        next_state_check = time.monotonic() + self.state_interval
        shown = None
        while True:
            address = self._address()
            if address:
                return address
            now = time.monotonic()
            if now >= next_state_check:
                next_state_check = now + self.state_interval
                status = await self.job.batch_status()
                if status is not None and status.ended and not self._address():
                    raise await self.job.failure(status, before=f"its scheduler wrote {self.scheduler_file}")
                if status is not None and status.describe() != shown:
                    shown = status.describe()
                    logger.info("scheduler job %s (%s): %s", self.job.name, self.job.job_id, shown)
            await asyncio.sleep(self.poll_interval)

    def _address(self) -> str | None:
        if self.folder is None:
            return read_scheduler_address(self.scheduler_file)
        return read_scheduler_address(os.path.basename(self.scheduler_file), self.folder)

    async def close(self) -> None:
        await self.job.close()
        await super().close()


class HostedWorkers(ProcessInterface):
    """The scheduler ``job``'s own GPU workers, as a worker spec entry whose close cancels nothing."""

    def __init__(self, scheduler: str | None = None, name: str | None = None, *, job: GPUJob):
        super().__init__()
        self.name = name
        self.job = job
        self.job_id = job.job_id
