"""Puts each GPU worker on the network card nearest its GPU, by setting its ``UCX_NET_DEVICES``.

An opt-in (``nic_affinity=True``, or a site's ``network.nic_affinity``) for sites that document
one card per GPU: by default UCX chooses the cards itself (UCX 1.11 and later map CUDA devices to
InfiniBand cards, and dask-cuda deprecated its own ``ucx_net_devices="auto"`` for it), and
``gpujobqueue check`` prints this module's map as a diagnosis (:func:`map_lines`).

A nanny preload (``gpujobqueue.preloads.nic_affinity``: ``--preload-nanny`` of ``dask worker``,
``distributed.nanny.preload`` of ``dask cuda worker``, which has no option for it): in the nanny,
before it starts its worker, :func:`dask_setup` sets ``UCX_NET_DEVICES`` in the environment the
nanny gives the worker, which UCX reads when the worker first listens or connects. The worker's
GPU is the first of its ``CUDA_VISIBLE_DEVICES`` (dask-cuda rotates the list so that each
worker's own device comes first; per-device workers see one, pinned by ``pin_device``, which
the script preloads first). Standard library only (and pynvml where it imports).

The node's topology (its GPUs, its cards, the PCI tree in ``/sys``) is read at run time: a card in the same PCIe
switch beats one on the same root complex, then the same NUMA node, then any. One card or none: UCX is left
alone. ``GPUJOBQUEUE_NIC_MAP`` pins the map, and a ``UCX_NET_DEVICES`` set by the user is never changed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import namedtuple

NET_DEVICES = "UCX_NET_DEVICES"
MAP_VARIABLE = "GPUJOBQUEUE_NIC_MAP"
NAMES_VARIABLE = "GPUJOBQUEUE_NIC_NAMES"
SYSFS_VARIABLE = "GPUJOBQUEUE_SYSFS"
LEVELS = ("same PCIe switch", "same root complex", "same NUMA node", "across NUMA nodes")
# nvidia-smi topo -m's path codes as (level, extra hops): PXB is a switch further than PIX.
TOPO_CODES = {"PIX": (0, 0), "PXB": (0, 1), "PHB": (1, 0), "NODE": (2, 0), "SYS": (3, 0), "SOC": (3, 0)}
COMMAND_TIMEOUT = 10

Gpu = namedtuple("Gpu", "index uuid bus_id")
Card = namedtuple("Card", "name bus_id")
Choice = namedtuple("Choice", "gpu card reason")


def normalise_bus_id(text):
    """``00000000:C1:00.0`` (NVML, nvidia-smi) or ``0000:c1:00.0`` (sysfs) -> ``0000:c1:00.0``."""
    text = text.strip().lower()
    match = re.fullmatch(r"(?:([0-9a-f]+):)?([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])", text)
    if not match:
        raise ValueError(f"{text!r} is not a PCI bus id")
    domain = int(match.group(1) or "0", 16)
    return f"{domain:04x}:{match.group(2)}:{match.group(3)}.{match.group(4)}"


def parse_gpu_query(text):
    """GPUs from ``nvidia-smi --query-gpu=index,uuid,pci.bus_id --format=csv,noheader``."""
    gpus = []
    for line in text.splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) == 3 and parts[0].isdigit():
            gpus.append(Gpu(int(parts[0]), parts[1], normalise_bus_id(parts[2])))
    return gpus


def nvml_gpus():
    """The node's GPUs from NVML, or None where pynvml or the driver is missing."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            uuid, bus = pynvml.nvmlDeviceGetUUID(handle), pynvml.nvmlDeviceGetPciInfo(handle).busId
            uuid, bus = (value.decode() if isinstance(value, bytes) else value for value in (uuid, bus))
            gpus.append(Gpu(index, uuid, normalise_bus_id(bus)))
        return gpus
    except Exception:
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def run_command(args):
    """A command's output, or "" where it is missing or fails."""
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def node_gpus():
    """The node's GPUs: NVML where pynvml imports, else nvidia-smi; [] without either."""
    gpus = nvml_gpus()
    if gpus is None:
        query = ["nvidia-smi", "--query-gpu=index,uuid,pci.bus_id", "--format=csv,noheader"]
        gpus = parse_gpu_query(run_command(query))
    return gpus


def _read(path):
    try:
        with open(path) as file:
            return file.read().strip()
    except OSError:
        return None


def infiniband_cards(sysfs="/sys"):
    """``mlx5_3:1``-style names of the InfiniBand (and RoCE) ports that are ACTIVE, with their card's bus id."""
    root = os.path.join(sysfs, "class", "infiniband")
    cards = []
    for device in sorted(os.listdir(root)) if os.path.isdir(root) else ():
        bus = os.path.basename(os.path.realpath(os.path.join(root, device, "device")))
        ports = os.path.join(root, device, "ports")
        numbers = sorted(os.listdir(ports), key=lambda p: int(p) if p.isdigit() else 0) if os.path.isdir(ports) else ()
        for port in numbers:
            if "ACTIVE" in (_read(os.path.join(ports, port, "state")) or "").upper():
                cards.append(Card(f"{device}:{port}", bus))
    return cards


def named_cards(names, sysfs="/sys"):
    """The network interfaces ``names`` (``hsn0``...) that sit on a PCI device, with its bus id."""
    cards = []
    for name in names:
        device = os.path.join(sysfs, "class", "net", name, "device")
        if os.path.exists(device):
            cards.append(Card(name, os.path.basename(os.path.realpath(device))))
    return cards


def node_cards(environ, sysfs="/sys"):
    """The node's cards: its active InfiniBand ports, else the interfaces ``GPUJOBQUEUE_NIC_NAMES`` names."""
    return infiniband_cards(sysfs) or named_cards(environ.get(NAMES_VARIABLE, "").replace(",", " ").split(), sysfs)


def pci_path(bus_id, sysfs="/sys"):
    """The device's PCI path from its host bridge: ``["pci0000:00", "0000:00:01.0", ..., bus_id]``, or None."""
    link = os.path.join(sysfs, "bus", "pci", "devices", bus_id)
    if not os.path.exists(link):
        return None
    parts = os.path.realpath(link).split(os.sep)
    roots = [i for i, part in enumerate(parts) if part.startswith("pci")]
    return parts[roots[-1] :] if roots else None


def numa_node(bus_id, sysfs="/sys"):
    """The device's NUMA node, or -1 where unknown."""
    text = _read(os.path.join(sysfs, "bus", "pci", "devices", bus_id, "numa_node"))
    return int(text) if text and text.lstrip("-").isdigit() else -1


def sysfs_distance(gpu_bus, card_bus, sysfs="/sys"):
    """(level, hops) between two PCI devices: level indexes :data:`LEVELS`; None where /sys cannot place one."""
    a, b = pci_path(gpu_bus, sysfs), pci_path(card_bus, sysfs)
    if a is None or b is None:
        return None
    common = 0
    for x, y in zip(a, b):
        if x != y:
            break
        common += 1
    hops = len(a) + len(b) - 2 * common
    if common >= 2:  # a common port below the host bridge: the same PCIe switch
        return (0, hops)
    if common == 1:
        return (1, hops)
    node = numa_node(gpu_bus, sysfs)
    return (2, hops) if node >= 0 and node == numa_node(card_bus, sysfs) else (3, hops)


def parse_topo_matrix(text):
    """``nvidia-smi topo -m``: {GPU index: {card name: (level, hops)}}; cards named ``mlx5_0:1``
    (port 1) from the NIC legend, or from the column headers of older versions."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return {}
    header = lines[0].split()
    legend = {}
    for line in lines:
        match = re.fullmatch(r"\s*(NIC\d+):\s*(\S+)\s*", line)
        if match:
            legend[match.group(1)] = match.group(2)
    matrix = {}
    for line in lines[1:]:
        cells = line.split()
        match = re.fullmatch(r"GPU(\d+)", cells[0]) if cells else None
        if not match:
            continue
        row = {}
        for column, cell in zip(header, cells[1:]):
            if column.startswith("GPU") or cell not in TOPO_CODES:
                continue
            name = legend.get(column, column)
            row[name if ":" in name else f"{name}:1"] = TOPO_CODES[cell]
        matrix[int(match.group(1))] = row
    return matrix


def parse_pinned_map(text):
    """``GPUJOBQUEUE_NIC_MAP``: ``0=mlx5_0:1,1=mlx5_3:1`` -> {key: card}; keys are GPU indices, UUIDs or bus ids."""
    pinned = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        key, _, card = (part.strip() for part in item.partition("="))
        good_card = re.fullmatch(r"[A-Za-z0-9_.-]{1,32}(:\d{1,3})?", card)
        if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,64}", key) or not good_card:
            raise ValueError(f"{MAP_VARIABLE}: {item!r} is not GPU=card (such as 0=mlx5_0:1)")
        try:
            key = normalise_bus_id(key)
        except ValueError:
            pass
        pinned[key] = card
    return pinned


def choose_cards(gpus, cards, distance):
    """Each GPU's nearest card: {bus id: (card, level)}; cards equally near go to the GPUs in turn.

    ``distance(gpu, card)`` is (level, hops) or None (unknown, never chosen)."""
    uses = {card.name: 0 for card in cards}
    chosen = {}
    for gpu in sorted(gpus, key=lambda g: g.index):
        ranked = []
        for order, card in enumerate(cards):
            near = distance(gpu, card)
            if near is not None:
                ranked.append((near, uses[card.name], order, card))
        if ranked:
            near, _, _, card = min(ranked)
            uses[card.name] += 1
            chosen[gpu.bus_id] = (card, near[0])
    return chosen


def _find_gpu(gpus, visible):
    """The GPU that a ``CUDA_VISIBLE_DEVICES`` entry (index or UUID) names, or None."""
    for gpu in gpus:
        if visible == str(gpu.index) or (visible.startswith("GPU-") and gpu.uuid.startswith(visible)):
            return gpu
    return None


def node_map(gpus, environ, sysfs="/sys", topo_text=None):
    """The node's map of its ``gpus``, {GPU bus id: Choice}, and the cards considered; ``environ``: the worker's
    environment (``GPUJOBQUEUE_NIC_MAP``, ``GPUJOBQUEUE_NIC_NAMES``); ``topo_text``: ``nvidia-smi topo -m``'s
    output, for a device /sys cannot place (None runs it when needed)."""
    pinned = parse_pinned_map(environ.get(MAP_VARIABLE, ""))
    if pinned:
        choices = {}
        for gpu in gpus:
            card = pinned.get(gpu.bus_id) or pinned.get(str(gpu.index)) or pinned.get(gpu.uuid)
            if card:
                choices[gpu.bus_id] = Choice(gpu, card, f"pinned by {MAP_VARIABLE}")
        return choices, sorted(set(pinned.values()))
    cards = node_cards(environ, sysfs)
    if len(cards) < 2:
        return {}, [card.name for card in cards]
    matrix = None

    def distance(gpu, card):
        nonlocal matrix
        near = sysfs_distance(gpu.bus_id, card.bus_id, sysfs)
        if near is None:
            if matrix is None:
                text = topo_text if topo_text is not None else run_command(["nvidia-smi", "topo", "-m"])
                matrix = parse_topo_matrix(text)
            near = matrix.get(gpu.index, {}).get(card.name)
        return near

    by_bus = {gpu.bus_id: gpu for gpu in gpus}
    chosen = choose_cards(gpus, cards, distance)
    choices = {bus: Choice(by_bus[bus], card.name, LEVELS[level]) for bus, (card, level) in chosen.items()}
    return choices, [card.name for card in cards]


def choose(environ, gpus=None, sysfs="/sys", topo_text=None):
    """This worker's card: ``(card or None, log text)``, the text to follow ``worker <name>``; never raises.
    ``environ``'s ``CUDA_VISIBLE_DEVICES`` names its GPU first; ``gpus`` None reads the node's (NVML,
    nvidia-smi) once /sys shows two cards or more."""

    try:
        if environ.get(NET_DEVICES):
            return None, f": UCX_NET_DEVICES={environ[NET_DEVICES]} was set for this job and is kept"
        visible = environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
        if not visible:
            return None, ": no CUDA_VISIBLE_DEVICES, UCX left to choose its network cards"
        if not environ.get(MAP_VARIABLE) and len(node_cards(environ, sysfs)) < 2:
            return None, f" (GPU {visible}): fewer than two network cards here, UCX left to choose"
        gpus = node_gpus() if gpus is None else gpus
        gpu = _find_gpu(gpus, visible)
        if gpu is None:
            return None, f" (GPU {visible}): not among the node's GPUs as NVML lists them, UCX left to choose"
        choices, cards = node_map(gpus, environ, sysfs, topo_text)
        choice = choices.get(gpu.bus_id)
        if choice is None:
            return None, f" (GPU {gpu.bus_id}): no card placed near it among {len(cards)}, UCX left to choose"
        return choice.card, f" (GPU {gpu.bus_id}) -> {choice.card}, {choice.reason}"
    except Exception as error:  # a worker must start whatever the node looks like
        return None, f": network card not chosen ({type(error).__name__}: {error}), UCX left to choose"


def map_lines(
    gpus: list | None = None, environ: dict | None = None, sysfs: str = "/sys", topo_text: str | None = None
) -> list[str]:
    """The GPU <-> card map this node would give workers of ``nic_affinity=True``, one line per GPU, for
    ``gpujobqueue check`` (without it UCX chooses)."""
    environ = os.environ if environ is None else environ
    if environ.get(NET_DEVICES):
        return [f"UCX_NET_DEVICES={environ[NET_DEVICES]} is set here and would be kept for every worker"]
    gpus = node_gpus() if gpus is None else gpus
    if not gpus:
        return ["no GPU here: no map"]
    try:
        choices, cards = node_map(gpus, environ, sysfs, topo_text)
    except Exception as error:  # a check reports, it does not fail
        return [f"no map ({type(error).__name__}: {error})"]
    if not choices:
        return [f"{len(cards)} network card(s) ({', '.join(cards) or 'none'}): UCX left to choose"]
    return [
        f"GPU {gpu.index} ({gpu.bus_id}) -> {choices[gpu.bus_id].card}, {choices[gpu.bus_id].reason}"
        if gpu.bus_id in choices
        else f"GPU {gpu.index} ({gpu.bus_id}): no card placed near it, UCX left to choose"
        for gpu in sorted(gpus, key=lambda g: g.index)
    ]


async def dask_setup(nanny):
    """distributed's preload hook, in the nanny before it starts its worker: the worker's card in the
    environment the nanny gives it, and one line in the job log saying which, under the worker's name.
    ``GPUJOBQUEUE_SYSFS`` names another /sys (the host's, mounted elsewhere in a container; a recorded
    one in tests)."""
    card, text = choose({**os.environ, **nanny.env}, sysfs=os.environ.get(SYSFS_VARIABLE) or "/sys")
    if card:
        nanny.env[NET_DEVICES] = card
    print(f"gpujobqueue: worker {nanny.name}{text}", file=sys.stderr, flush=True)
