"""``python -m gpujobqueue``: the ``gpujobqueue`` command, as ``python -m dask_cuda.cli`` runs dask-cuda's."""

from gpujobqueue.cli import main

if __name__ == "__main__":
    main(prog_name="gpujobqueue")
