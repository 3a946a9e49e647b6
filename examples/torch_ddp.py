"""PyTorch DistributedDataParallel training on the workers of a gpujobqueue cluster.

What it shows:

- One training task per worker, each pinned to its own worker with
  ``client.submit(..., workers=[address])``. Each task is one DDP rank: rank ``i`` runs
  on the ``i``-th worker (by name), and the world size is the number of workers.
- ``torch.distributed.init_process_group`` with ``nccl`` on GPUs (``gloo`` in the CPU
  form). It meets at a master address and port on the first worker: the host of that
  worker's address, and a port found free there with ``client.run``.
- ``DistributedDataParallel`` around a small MLP, trained on a synthetic regression
  dataset. Every rank makes the same dataset from one seed and trains on its own
  shard (``rank::world_size``). Each rank starts from weights of its own, so DDP must
  broadcast rank 0's weights.

Checks: one rank ran on each worker; the replicas started from different weights and
DDP made them equal; the loss over all shards fell at least tenfold; after training the
weights are identical on every rank.

The GPU form (CUDA build of torch, nccl, one GPU per worker) runs where torch with CUDA
is importable and there are NVIDIA GPUs. Elsewhere the CPU form runs the same code with
gloo on CPU workers (on this machine a CPU pool's, which hold no GPU and are counted in
core-hours). It prints which form it runs.

Run it:

    python examples/torch_ddp.py --size small           # this machine (local batch system)
    python examples/torch_ddp.py --site perlmutter --account m1234_g --walltime 00:30:00 --gpus 8 --size large

Needs torch on the client and the workers; a CPU build is enough for the CPU form
(``pip install torch --index-url https://download.pytorch.org/whl/cpu``). Without it the
example says so and exits with status 3. Exit status: 0 all checks passed, 1 a check
failed, 3 a package is missing, 4 the workers lack what the chosen form needs (torch, or
CUDA for the GPU form).

On several nodes, gloo and nccl pick a network interface themselves. Where they pick a
wrong one, set ``GLOO_SOCKET_IFNAME`` / ``NCCL_SOCKET_IFNAME`` with the cluster's
``environment`` keyword.
"""

from __future__ import annotations

import socket
import sys
import time

import _common
from distributed import Client, get_worker
from distributed.comm import get_address_host

from gpujobqueue import GPUCluster

# Per form and size: samples per rank, features, hidden units, batch size, epochs.
SIZES = {
    "gpu": {
        "small": (65_536, 64, 256, 1_024, 10),
        "medium": (1_048_576, 128, 1_024, 4_096, 10),
        "large": (4_194_304, 256, 4_096, 8_192, 10),
    },
    "cpu": {
        "small": (2_048, 16, 32, 128, 15),
        "medium": (16_384, 32, 128, 256, 15),
        "large": (131_072, 64, 256, 512, 15),
    },
}
SEED = 1234


def free_port():
    """On the first worker: a TCP port free there, for the process group to meet at."""
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def torch_on_worker():
    """On a worker: whether torch imports, its version and whether it sees a CUDA device."""
    try:
        import torch
    except ImportError as error:
        return {"torch": None, "cuda": False, "error": str(error)}
    return {"torch": torch.__version__, "cuda": torch.cuda.is_available()}


def train(rank, world_size, master, port, gpu, size):
    """On a worker: one DDP rank. Returns its losses, weights and where it ran."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel

    samples, features, hidden, batch, epochs = size
    if gpu:
        device = torch.device("cuda", 0)  # dask-cuda lists the worker's own GPU first in CUDA_VISIBLE_DEVICES
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
        torch.set_num_threads(1)  # several ranks share this machine's cores; one thread each avoids oversubscription
    dist.init_process_group(
        "nccl" if gpu else "gloo",
        init_method=f"tcp://{master}:{port}",
        rank=rank,
        world_size=world_size,
        timeout=timedelta(minutes=5),
    )
    try:
        # The same dataset on every rank (one seed); each rank keeps its own shard.
        g = torch.Generator().manual_seed(SEED)
        x = torch.randn(samples * world_size, features, generator=g)
        w = torch.randn(features, 1, generator=g) / features**0.5
        y = x @ w + 0.3 * torch.sin(3 * x[:, :1]) + 0.05 * torch.randn(len(x), 1, generator=g)
        x, y = x[rank::world_size].to(device), y[rank::world_size].to(device)

        torch.manual_seed(SEED + 1 + rank)  # a different start on each rank: DDP broadcasts rank 0's weights
        model = nn.Sequential(nn.Linear(features, hidden), nn.Tanh(), nn.Linear(hidden, 1)).to(device)
        before = sum(float(p.detach().double().sum()) for p in model.parameters())
        ddp = DistributedDataParallel(model, device_ids=[0] if gpu else None)
        synced = sum(float(p.detach().double().sum()) for p in model.parameters())
        optimizer = torch.optim.Adam(ddp.parameters(), lr=3e-3)

        def loss_over_all_shards():
            with torch.no_grad():
                total = torch.stack([((model(x) - y) ** 2).sum(), torch.tensor(float(len(x)), device=device)])
                dist.all_reduce(total)
                return float(total[0] / total[1])

        initial = loss_over_all_shards()
        shuffle = torch.Generator().manual_seed(SEED + 100 + rank)
        start, steps = time.perf_counter(), 0
        for _ in range(epochs):
            order = torch.randperm(len(x), generator=shuffle).to(device)
            for i in range(0, len(x), batch):  # the same number of steps on every rank: equal shards
                index = order[i : i + batch]
                optimizer.zero_grad()
                loss = nn.functional.mse_loss(ddp(x[index]), y[index])
                loss.backward()  # DDP averages the gradients over the ranks here
                optimizer.step()
                steps += 1
        if gpu:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        final = loss_over_all_shards()
        weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu().numpy()
        return {
            "rank": rank,
            "worker": get_worker().name,
            "host": socket.gethostname(),
            "backend": dist.get_backend(),
            "device": torch.cuda.get_device_name(device) if gpu else "cpu",
            "before": before,
            "synced": synced,
            "initial": initial,
            "final": final,
            "steps": steps,
            "seconds": seconds,
            "weights": weights,
        }
    finally:
        dist.destroy_process_group()


def run(client, args, form):
    import numpy as np

    code = _common.check_workers(client, form)
    if code:
        return code
    gpu = form == "gpu"
    found = client.run(torch_on_worker)
    if any(t["torch"] is None for t in found.values()):
        print(
            "FAILED: torch is not importable on the workers: "
            f"{sorted({t.get('error') for t in found.values() if t['torch'] is None})}"
        )
        print("RESULT: not run (torch missing on the workers)")
        return _common.EXIT_MISSING_PACKAGE
    if gpu and not all(t["cuda"] for t in found.values()):
        print(
            "FAILED: the GPU form needs torch with CUDA on every worker; torch sees no CUDA device on some. "
            "Use --form cpu."
        )
        print("RESULT: not run (no CUDA in torch on the workers)")
        return _common.EXIT_WRONG_WORKERS

    # Rank i runs on the i-th worker by name; the process group meets on rank 0's worker.
    workers = _common.workers_info(client)
    addresses = sorted(workers, key=lambda address: str(workers[address]["name"]))
    world_size = len(addresses)
    master = get_address_host(addresses[0])
    port = client.run(free_port, workers=[addresses[0]])[addresses[0]]
    size = SIZES[form][args.size]
    print(
        f"\nDDP: {world_size} ranks, {'nccl' if gpu else 'gloo'} at tcp://{master}:{port}; "
        f"{size[0]} samples x {size[1]} features per rank, MLP {size[1]}-{size[2]}-1, batch {size[3]}, {size[4]} epochs"
    )
    start = time.perf_counter()
    futures = [
        client.submit(train, rank, world_size, master, port, gpu, size, workers=[address], pure=False)
        for rank, address in enumerate(addresses)
    ]
    results = sorted(client.gather(futures), key=lambda r: r["rank"])
    seconds = time.perf_counter() - start

    _common.print_table(
        f"ranks ({'CUDA torch, nccl' if gpu else 'CPU torch, gloo'}, --size {args.size}; {seconds:.1f} s in all)",
        ("rank", "worker", "device", "backend", "steps", "train s", "loss before", "loss after"),
        [
            (
                r["rank"],
                r["worker"],
                r["device"],
                r["backend"],
                r["steps"],
                f"{r['seconds']:.2f}",
                f"{r['initial']:.5f}",
                f"{r['final']:.5f}",
            )
            for r in results
        ],
    )
    checks = _common.Checks()
    ran_on = [r["worker"] for r in results]
    checks(
        "one rank on each worker",
        sorted(ran_on) == sorted(str(workers[a]["name"]) for a in addresses) and len(set(ran_on)) == world_size,
        f"{world_size} ranks on {len(set(ran_on))} workers",
    )
    befores = [r["before"] for r in results]
    checks(
        "DDP started every replica from rank 0's weights",
        (world_size == 1 or len(set(befores)) == world_size)
        and all(r["synced"] == results[0]["before"] for r in results),
        f"sums of the initial weights {', '.join(f'{b:.4f}' for b in befores)} "
        f"-> {results[0]['before']:.4f} on every rank",
    )
    initial, final = results[0]["initial"], results[0]["final"]
    checks("loss over all shards fell at least tenfold", final < initial / 10, f"{initial:.5f} -> {final:.5f}")
    difference = max(float(np.max(np.abs(r["weights"] - results[0]["weights"]))) for r in results)
    checks(
        "weights identical on every rank after training",
        difference == 0.0,
        f"{results[0]['weights'].size} weights, largest difference between ranks {difference:.1e}",
    )
    return checks.exit_code()


def main(argv=None):
    args = _common.parse(_common.parser(__doc__), argv)
    if not _common.importable("torch"):
        return _common.missing_package(
            "torch",
            f"{sys.executable} -m pip install torch --index-url https://download.pytorch.org/whl/cpu"
            " (a CPU build; plain `pip install torch` on Linux brings the CUDA libraries too)",
            "this example trains a torch model",
        )
    form, why = _common.choose_form(args, "torch")
    if form == "gpu" and args.form == "auto":
        import torch  # only to tell a CUDA build from a CPU one

        if torch.version.cuda is None:
            form, why = "cpu", f"torch {torch.__version__} here is a CPU build"
    print(
        f"form: {form.upper()} "
        f"({'CUDA torch and nccl, one GPU per worker' if form == 'gpu' else 'CPU torch and gloo'}): {why}"
    )

    if _common.inside_job():  # gpujobqueue render ... --run: the job's workers are already up
        with Client() as client:
            return run(client, args, form)

    cpu_pool = _common.cpu_pool(args, form)  # no GPU to hold: CPU workers, counted in core-hours
    with GPUCluster(site=args.site, batch=args.batch, cpu_pool=cpu_pool, **_common.cluster_keywords(args)) as cluster:
        workers = args.gpus or cluster.workers_per_job
        cluster.scale(cpu_workers=workers) if cpu_pool else cluster.scale(gpus=workers)
        with Client(cluster) as client:
            client.wait_for_workers(workers, timeout=args.timeout)
            kind = "CPU" if cpu_pool else "GPU"
            print(f"{workers} {kind} worker(s) connected; dashboard: {cluster.dashboard_link or 'none'}")
            return run(client, args, form)


if __name__ == "__main__":
    sys.exit(main())
