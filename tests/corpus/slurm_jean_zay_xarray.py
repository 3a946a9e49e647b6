"""The Jean Zay users' documentation: an xarray analysis on 4 CPU nodes.

Source: jean-zay-users/jean-zay-doc, docs/examples/dask/xarray/example.py at commit
e59436e0dc1d20e83c72cdd0da776bf5f44a60ee
(https://github.com/jean-zay-users/jean-zay-doc/blob/e59436e0dc1d20e83c72cdd0da776bf5f44a60ee/docs/examples/dask/xarray/example.py).
Date: not shown.
Batch system: SLURM (Jean Zay, IDRIS).
Meant: CPU workers, 40 processes per 40-core node, ``--hint=nomultithread``, and an environment
variable for the workers given as ``env=`` (a keyword dask-jobqueue does not have).
"""

SOURCE = {
    "repo": "jean-zay-users/jean-zay-doc",
    "path": "docs/examples/dask/xarray/example.py",
    "commit": "e59436e0dc1d20e83c72cdd0da776bf5f44a60ee",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 0, "note": "CPU workers, processes=40, env= keyword"}


def make(module):
    cluster = module.SLURMCluster(
        project="your_account",
        cores=40,
        processes=40,
        memory="160GB",
        walltime="20:00:00",
        interface="ib0",
        death_timeout=300,
        job_extra=["--job-name=worker", "--hint=nomultithread"],
        env={"HDF5_USE_FILE_LOCKING": "FALSE"},
    )
    return cluster
