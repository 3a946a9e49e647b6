"""Starts each worker of a per-device job's nannies with its own device alone visible.

A per-device job under nannies runs one ``dask worker --nworkers N --nanny`` per node, whose
nannies each start one worker; this nanny preload (``--preload-nanny
gpujobqueue.preloads.pin_device``) sets the device-visibility variable in the environment each
nanny gives its worker. The job script names the pairs: ``GPUJOBQUEUE_DEVICES`` holds
``<worker name>=<devices>`` for each of the node's workers, comma-separated (a worker given a share of
several devices by dask-jobqueue's ``processes`` has them joined by ``+``: ``w-0=0+1,w-1=2+3``), and
``GPUJOBQUEUE_VISIBILITY_VARIABLE`` the variable (``CUDA_VISIBLE_DEVICES``,
``ROCR_VISIBLE_DEVICES``...). The worker's name is the nanny's, as the script spells it
(gpujobqueue/settings/naming.py), so nothing here reads a name.
"""

import os

DEVICES_VARIABLE = "GPUJOBQUEUE_DEVICES"
VISIBILITY_VARIABLE = "GPUJOBQUEUE_VISIBILITY_VARIABLE"


def device_of(worker_name, pairs):
    """The devices of ``worker_name`` in ``pairs`` (``name=device,name=device+device``), as the
    visibility variable lists them (comma-separated); a LookupError where the worker has none."""

    for pair in pairs.split(","):
        name, _, device = pair.partition("=")
        if name == str(worker_name) and device:
            return device.replace("+", ",")
    raise LookupError(f"gpujobqueue: no device for worker {worker_name} in {DEVICES_VARIABLE}={pairs}")


def dask_setup(nanny):
    """distributed's preload hook, in the nanny before it starts its worker: pin the worker's device."""
    variable = os.environ.get(VISIBILITY_VARIABLE, "CUDA_VISIBLE_DEVICES")
    nanny.env[variable] = device_of(nanny.name, os.environ[DEVICES_VARIABLE])
