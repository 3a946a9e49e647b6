"""Elfantasma (parakeet's predecessor, Diamond / Rosalind Franklin Institute): a GPU per Grid Engine job.

Source: rosalindfranklininstitute/parakeet, src/elfantasma/futures.py at commit
5fc8dba15068149bca43813281c5ebfc2fefd97a, ``factory(method="sge")``
(https://github.com/rosalindfranklininstitute/parakeet/blob/5fc8dba15068149bca43813281c5ebfc2fefd97a/src/elfantasma/futures.py).
Date: not shown.
Batch system: Grid Engine (``all.q``, project ``tomography``).
Meant: one GPU per job (``resource_spec="gpu=1"``) for 8 cores and 64 GB, the environment
exported (``-V``). ``local_directory`` and ``log_directory`` are ``elfantasma.config.temp_directory()``
in the source; a relative directory name stands for it here.
"""

SOURCE = {
    "repo": "rosalindfranklininstitute/parakeet",
    "path": "src/elfantasma/futures.py",
    "commit": "5fc8dba15068149bca43813281c5ebfc2fefd97a",
    "date": "date not shown",
}
BATCH = "sge"
MEANT = {"gpus_per_job": 1, "note": "resource_spec gpu=1, cores=8"}


def temp_directory():
    """Stands for ``elfantasma.config.temp_directory()``: a directory path."""
    return "_elfantasma"


def make(module):
    cluster = module.SGECluster(
        cores=8,
        memory="64 GB",
        queue="all.q",
        project="tomography",
        resource_spec="gpu=1",
        job_extra=["-V"],
        name="elfantasma",
        local_directory=temp_directory(),
        log_directory=temp_directory(),
    )
    return cluster
