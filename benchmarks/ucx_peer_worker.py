"""A trial for issue 34, not part of the package: a dask worker that other workers reach over UCX,
while it and its nanny talk to the scheduler over the scheduler's protocol (TLS).

distributed gives a worker its nanny's protocol, and the nanny the scheduler's: ``dask worker``
has no option to listen on UCX for data and on TLS for control. ``fixed_cost.py --try ucx-peers``
and ``gpu.py --svd-configs ucx-peers`` start workers with ``--worker-class
benchmarks.ucx_peer_worker.UCXPeerWorker`` (the repository root on the workers' PYTHONPATH) and a
TLS scheduler: the nannies then start no UCX and the scheduler's comms stay under TLS, while the
results move between GPUs over UCX. Whether that keeps UCX's transfers and loses its cost to the
scheduler's event loop and to the start-up is what the trial measures.
"""

from distributed import Worker

# The class by the name the workers import it by, with the repository root on their PYTHONPATH.
WORKER_CLASS = "benchmarks.ucx_peer_worker.UCXPeerWorker"


class UCXPeerWorker(Worker):
    """:class:`distributed.Worker` listening on UCX whatever protocol its nanny was given."""

    def __init__(self, *args, protocol=None, **kwargs):
        super().__init__(*args, protocol="ucx", **kwargs)
