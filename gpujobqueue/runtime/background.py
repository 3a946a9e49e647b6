"""A loop a cluster runs in its event loop from ``start()`` until ``stop()``: the job watch and the usage watch."""

from __future__ import annotations

import asyncio
import contextlib


class BackgroundLoop:
    """Runs ``_run()`` as one task; ``stop()`` cancels it and waits for it to end."""

    _task: asyncio.Task | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        raise NotImplementedError
