"""Parakeet (cryo-EM simulation, Rosalind Franklin Institute / Diamond): one GPU per Grid Engine job.

Source: rosalindfranklininstitute/parakeet, src/parakeet/futures.py at commit
1906118c54605c8ba4ed8eecbe39cd2728b33ec5, the ``method == "sge"`` branch of ``factory()``
(https://github.com/rosalindfranklininstitute/parakeet/blob/1906118c54605c8ba4ed8eecbe39cd2728b33ec5/src/parakeet/futures.py).
Date: not shown.
Batch system: Grid Engine (``all.q``, project ``tomography``).
Meant: "request 1 gpu and 1 core", one process of one thread per job (``resource_spec="gpu=1"``),
the environment exported (``-V``). The published code passes ``nthreads=1``, a keyword dask-jobqueue
does not have. ``local_directory`` and ``log_directory`` are ``parakeet.config.temp_directory()`` in
the source; a relative directory name stands for it here (that function needs parakeet installed).
"""

SOURCE = {
    "repo": "rosalindfranklininstitute/parakeet",
    "path": "src/parakeet/futures.py",
    "commit": "1906118c54605c8ba4ed8eecbe39cd2728b33ec5",
    "date": "date not shown",
}
BATCH = "sge"
MEANT = {"gpus_per_job": 1, "note": "resource_spec gpu=1, one process of one thread"}


def temp_directory():
    """Stands for ``parakeet.config.temp_directory()``: a directory path."""
    return "_parakeet"


def make(module):
    cluster = module.SGECluster(
        cores=1,
        processes=1,
        nthreads=1,
        memory="64 GB",
        queue="all.q",
        project="tomography",
        resource_spec="gpu=1",
        job_extra=["-V"],
        name="parakeet",
        local_directory=temp_directory(),
        log_directory=temp_directory(),
    )
    return cluster
