"""NCAR ESDS blog post: dask-jobqueue on Casper after its move to PBS.

Source: NCAR/esds, posts/casper_pbs_dask.md at commit 7ae35a6252d71b155ac9c019138803e9101749e4,
"Example using new Casper-batch login"
(https://github.com/NCAR/esds/blob/7ae35a6252d71b155ac9c019138803e9101749e4/posts/casper_pbs_dask.md).
Date: not shown (the post is about the switch of 7 April 2021).
Batch system: PBS Pro (NCAR Casper, a GPU and data-analysis system).
Meant: one single-threaded CPU worker per job, the select line in ``resource_spec``, ``$TMPDIR`` as
local directory, ``ib0``.
"""

SOURCE = {
    "repo": "NCAR/esds",
    "path": "posts/casper_pbs_dask.md",
    "commit": "7ae35a6252d71b155ac9c019138803e9101749e4",
    "date": "date not shown",
}
BATCH = "pbs"
MEANT = {"gpus_per_job": 0, "note": "CPU worker, resource_spec select line"}


def make(module):
    cluster = module.PBSCluster(
        cores=1,  # The number of cores you want
        memory="10GB",  # Amount of memory
        processes=1,  # How many processes
        queue="casper",  # The type of queue to utilize (/glade/u/apps/dav/opt/usr/bin/execcasper)
        local_directory="$TMPDIR",  # Use your local directory
        resource_spec="select=1:ncpus=1:mem=10GB",  # Specify resources
        project="project_id",  # Input your project ID here
        walltime="02:00:00",  # Amount of wall time
        interface="ib0",  # Interface to use
    )
    return cluster
