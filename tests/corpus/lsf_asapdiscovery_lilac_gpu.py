"""ASAP Discovery's dask utilities: the "lilac-gpu" cluster, one GTX 1080 Ti per LSF job on MSKCC's lilac.

Source: asapdiscovery/asapdiscovery, asapdiscovery-data/asapdiscovery/data/dask_utils.py at commit
034c4e051bea4bacaf66236b9d22fb0b95bacbaf, ``LilacGPUDaskCluster.from_gpu().to_cluster(exclude_interface="lo")``
as ``dask_client_from_type(DaskType.LILAC_GPU)`` calls it
(https://github.com/asapdiscovery/asapdiscovery/blob/034c4e051bea4bacaf66236b9d22fb0b95bacbaf/asapdiscovery-data/asapdiscovery/data/dask_utils.py).
Date: not shown.
Batch system: LSF (MSKCC lilac, queue ``gpuqueue``).
Meant: one GPU per job through LSF's own ``-gpu num=1:j_exclusive=yes:mode=shared`` in
``job_extra_directives``, with a host group (``-m lt-gpu``) and a host excluded (``-R "select[hname!=lt16]"``);
one single-threaded worker of 48 GB; ``--lifetime 24h --lifetime-stagger 2m`` in ``worker_extra_args`` for a
24-hour walltime (given to LSF as ``24:00``); the job script on stdin (``use_stdin``); the scheduler and the
workers on the same network interface, guessed on the submitting host.

The source builds the keywords with pydantic models (``LilacDaskCluster`` and its GPU subclass); ``make``
writes out the keywords they give, in their order. ``guess_network_interface`` comes from the package's
``execution_utils`` (the first interface, ``lo`` excluded, with IPv4 and IPv6 addresses); the stand-in below
takes the first interface, ``lo`` excluded, with an IPv4 address.
"""

SOURCE = {
    "repo": "asapdiscovery/asapdiscovery",
    "path": "asapdiscovery-data/asapdiscovery/data/dask_utils.py",
    "commit": "034c4e051bea4bacaf66236b9d22fb0b95bacbaf",
    "date": "date not shown",
}
BATCH = "lsf"
MEANT = {"gpus_per_job": 1, "note": "-gpu num=1:j_exclusive=yes:mode=shared, -m host group, --lifetime 24h"}


def guess_network_interface(exclude):
    """Stands for ``asapdiscovery.data.execution_utils.guess_network_interface``: a network interface name."""
    import socket

    import psutil

    for name, addresses in sorted(psutil.net_if_addrs().items()):
        if name not in exclude and any(address.family == socket.AF_INET for address in addresses):
            return name
    raise RuntimeError("no network interface with an IPv4 address")


def make(module):
    nic = guess_network_interface(exclude=["lo"])
    return module.LSFCluster(
        interface=nic,
        scheduler_options={"interface": nic},
        worker_extra_args=[
            "--lifetime",
            "24h",
            "--lifetime-stagger",
            "2m",
        ],  # leave a slight buffer
        walltime="24:00",  # convert to LSF units manually
        name="dask-worker",
        cores=1,
        memory="48 GB",
        death_timeout=120,
        shebang="#!/usr/bin/env bash",
        queue="gpuqueue",
        project=None,
        use_stdin=True,
        job_extra_directives=[
            "-gpu num=1:j_exclusive=yes:mode=shared",
            "-m lt-gpu",
            '-R "select[hname!=lt16]"',
        ],
    )
