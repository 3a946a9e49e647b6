"""With nic_affinity=True, each GPU worker's UCX_NET_DEVICES: the card nearest its GPU, from recorded
node topologies; by default UCX chooses, and nothing of gpujobqueue's sets it.

The topologies are fake /sys trees built in tmp_path from compact descriptions (below), and
``nvidia-smi topo -m`` texts. Where a description comes from a published source it says so;
the rest of each tree (root ports, switch ports) is constructed to match the documented layout.
"""

from __future__ import annotations

import asyncio
import io
import os
from contextlib import redirect_stderr
from pathlib import Path
from types import SimpleNamespace

import dask.array as da
import pytest
import yaml
from dask.distributed import Client

from gpujobqueue import LocalGPUCluster, ValidationError
from gpujobqueue.machine.gpus import nvidia_gpu_ids
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.preloads import nic_affinity as nic
from gpujobqueue.preloads.nic_affinity import Gpu

# NVML on a GPU machine names that machine's GPUs, not a recorded node's.
RECORDED_GPUS_ONLY = pytest.mark.skipif(bool(nvidia_gpu_ids()), reason="NVML here would name this host's GPUs")


def bus(short: str) -> str:
    return short if short.count(":") == 2 else f"0000:{short}"


def chain(root: str, *hops: str) -> str:
    """A device's PCI path: its host bridge ``pci0000:<root>``, then each bridge down to it."""
    return "/".join([f"pci0000:{root}", *(bus(hop) for hop in hops)])


def switched(root: str, device: str, port: str) -> str:
    """``device`` behind downstream port ``port`` of a PCIe switch on the root port of ``root``."""
    upstream = f"{int(root, 16) + 1:02x}:00.0"
    downstream = f"{int(root, 16) + 2:02x}:{port}"
    return chain(root, f"{root}:01.0", upstream, downstream, device)


def build_sysfs(
    tmp_path: Path,
    gpus: dict[str, str],
    cards: dict[str, str],
    numa: dict[str, int] = {},
    down: tuple[str, ...] = (),
    pci: bool = True,
) -> tuple[str, list[Gpu]]:
    """A fake /sys: ``gpus`` and ``cards`` map names to PCI paths (the last hop is the bus id),
    ``numa`` host bridges to NUMA nodes; ports of ``down`` cards are DOWN. Without ``pci`` the
    PCI tree is missing (a container's /sys): only class/infiniband is there."""
    sysfs = tmp_path / "sys"
    pci_devices = sysfs / "bus" / "pci" / "devices"
    pci_devices.mkdir(parents=True)
    node_gpus = []
    for name, path in {**gpus, **cards}.items():
        device = sysfs / "devices" / path
        device.mkdir(parents=True, exist_ok=True)
        (device / "numa_node").write_text(f"{numa.get(path.split('/')[0], -1)}\n")
        bus_id = path.rsplit("/", 1)[1]
        twice = bus_id in path.split("/")[:-1] or (pci_devices / bus_id).exists()
        assert not twice, f"{bus_id} twice in the fake tree"
        if pci:
            (pci_devices / bus_id).symlink_to(device)
        if name in gpus:
            node_gpus.append(Gpu(len(node_gpus), f"GPU-{len(node_gpus):08d}-fake", bus_id))
        else:
            card, _, port = name.partition(":")
            entry = sysfs / "class" / "infiniband" / card
            (entry / "ports" / port).mkdir(parents=True)
            (entry / "ports" / port / "state").write_text("1: DOWN\n" if card in down else "4: ACTIVE\n")
            (entry / "ports" / port / "link_layer").write_text("InfiniBand\n")
            if not (entry / "device").exists():
                (entry / "device").symlink_to(device)
    return str(sysfs), node_gpus


# DGX H100: the ConnectX-7 of each GPU, as NVIDIA's DGX H100 User Guide tabulates them (§1.2.3,
# "Network Modules", table 6: OSFP4P2 CX1 GPU 0 ibp24s0 mlx5_0 ... OSFP1P1 CX0 GPU 7 ibp220s0
# mlx5_11): the card's bus is its interface's pNNs0 number. GPU bus ids as DGX H100s report them
# (1b, 43, 52, 61, 9d, c3, d1, df). Constructed: the switch ports, the storage cards' buses
# (mlx5_1/2 on CPU 0, mlx5_7/8 on CPU 1; the guide puts them in slots 1 and 2), NUMA 0 and 1.
DGX_H100_PAIRS = [
    ("1b", "mlx5_0", "18"),
    ("43", "mlx5_3", "40"),
    ("52", "mlx5_4", "4f"),
    ("61", "mlx5_5", "5e"),
    ("9d", "mlx5_6", "9a"),
    ("c3", "mlx5_9", "c0"),
    ("d1", "mlx5_10", "ce"),
    ("df", "mlx5_11", "dc"),
]


def dgx_h100(tmp_path, **options):
    gpus, cards, numa = {}, {}, {}
    for i, (gpu, card, card_bus) in enumerate(DGX_H100_PAIRS):
        root = f"{int(gpu, 16) - 6:02x}"
        gpus[f"gpu{i}"] = switched(root, f"{gpu}:00.0", "00.0")
        cards[f"{card}:1"] = switched(root, f"{card_bus}:00.0", "01.0")
        numa[f"pci0000:{root}"] = 0 if i < 4 else 1
    storage = (("mlx5_1", "27", "0"), ("mlx5_2", "27", "1"), ("mlx5_7", "a8", "0"), ("mlx5_8", "a8", "1"))
    for card, root, function in storage:
        cards[f"{card}:1"] = chain(root, f"{root}:01.0", f"{int(root, 16) + 2:02x}:00.{function}")
        numa[f"pci0000:{root}"] = 0 if root == "27" else 1
    return build_sysfs(tmp_path, gpus, cards, numa, **options)


# DGX A100: four PCIe switches, each with two A100s and two ConnectX-6 compute cards (DGX A100
# User Guide, "Network Ports"; NVIDIA/nccl#1505 shows GPU 0 at 07:00.0 and mlx5_0 at 0c:00.0
# under one Broadcom switch, each behind its own downstream port). Constructed: the other buses,
# the storage pair mlx5_4/5 (one dual-port card), NUMA nodes. Each GPU is as near its switch's
# two cards: the tie is shared out.
DGX_A100_SWITCHES = [
    ("01", ("07", "0f"), ("0c", "12"), 3),
    ("41", ("47", "4e"), ("4b", "54"), 1),
    ("81", ("87", "90"), ("8d", "94"), 7),
    ("b1", ("b7", "bd"), ("ba", "c1"), 5),
]
DGX_A100_CARDS = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]


def dgx_a100(tmp_path):
    gpus, cards, numa = {}, {}, {}
    names = iter(DGX_A100_CARDS)
    for root, gpu_buses, card_buses, node in DGX_A100_SWITCHES:
        numa[f"pci0000:{root}"] = node
        for port, gpu in enumerate(gpu_buses):  # each GPU behind a second-level switch
            sub = f"{int(gpu, 16) - 2:02x}"
            below = f"/0000:{int(sub, 16) + 1:02x}:00.0/0000:{gpu}:00.0"
            gpus[f"gpu{len(gpus)}"] = switched(root, f"{sub}:00.0", f"0{port}.0") + below
        for port, card in enumerate(card_buses):
            cards[f"{next(names)}:1"] = switched(root, f"{card}:00.0", f"1{port}.0")
    for function, card in enumerate(("mlx5_4", "mlx5_5")):
        cards[f"{card}:1"] = chain("e1", "e1:01.0", f"e3:00.{function}")
    numa["pci0000:e1"] = 4
    return build_sysfs(tmp_path, gpus, cards, numa)


# JUWELS Booster-like: 4 A100s, 4 HDR200 HCAs, each GPU and its HCA behind one PCIe switch, the
# pairs on NUMA domains 3, 1, 7, 5 of two EPYC 7402s (JSC's JUWELS Booster documentation gives the
# 4 GPU / 4 HCA node and the domains; the bus numbers are constructed).
JUWELS = [
    ("01", "05:00.0", "06:00.0", 3),
    ("41", "45:00.0", "46:00.0", 1),
    ("81", "85:00.0", "86:00.0", 7),
    ("c1", "c5:00.0", "c6:00.0", 5),
]


def juwels_booster(tmp_path, **options):
    gpus, cards, numa = {}, {}, {}
    for i, (root, gpu, card, node) in enumerate(JUWELS):
        gpus[f"gpu{i}"] = switched(root, gpu, "00.0")
        cards[f"mlx5_{i}:1"] = switched(root, card, "01.0")
        numa[f"pci0000:{root}"] = node
    return build_sysfs(tmp_path, gpus, cards, numa, **options)


def one_hca(tmp_path):
    gpus = {f"gpu{i}": switched(root, gpu, "00.0") for i, (root, gpu, _, _) in enumerate(JUWELS)}
    return build_sysfs(tmp_path, gpus, {"mlx5_0:1": switched("01", "06:00.0", "01.0")}, {"pci0000:01": 3})


def no_hca(tmp_path):
    gpus = {"gpu0": switched("01", "05:00.0", "00.0"), "gpu1": switched("41", "45:00.0", "00.0")}
    return build_sysfs(tmp_path, gpus, {})


def node_map(sysfs, gpus, environ=None, topo_text=""):
    choices, _ = nic.node_map(gpus, environ or {}, sysfs, topo_text)
    return {gpu.index: (choices[gpu.bus_id].card, choices[gpu.bus_id].reason) for gpu in gpus if gpu.bus_id in choices}


def test_dgx_h100_gives_each_gpu_the_card_the_user_guide_pairs_it_with(tmp_path):
    sysfs, gpus = dgx_h100(tmp_path)
    chosen = node_map(sysfs, gpus)
    assert chosen == {i: (f"{card}:1", "same PCIe switch") for i, (_, card, _) in enumerate(DGX_H100_PAIRS)}
    # the storage cards, ACTIVE too, are never chosen
    assert len(nic.infiniband_cards(sysfs)) == 12


def test_dgx_a100_shares_each_switch_s_two_cards_between_its_two_gpus(tmp_path):
    sysfs, gpus = dgx_a100(tmp_path)
    chosen = node_map(sysfs, gpus)
    assert [card for card, _ in chosen.values()] == [f"{name}:1" for name in DGX_A100_CARDS]
    assert {reason for _, reason in chosen.values()} == {"same PCIe switch"}


def test_juwels_booster_like_node_pairs_gpu_i_with_hca_i(tmp_path):
    sysfs, gpus = juwels_booster(tmp_path)
    assert node_map(sysfs, gpus) == {i: (f"mlx5_{i}:1", "same PCIe switch") for i in range(4)}
    assert nic.map_lines(gpus, {}, sysfs, "") == [
        f"GPU {i} ({gpu.bus_id}) -> mlx5_{i}:1, same PCIe switch" for i, gpu in enumerate(gpus)
    ]


def test_a_down_port_is_not_a_card(tmp_path):
    sysfs, gpus = juwels_booster(tmp_path, down=("mlx5_1",))
    chosen = node_map(sysfs, gpus)
    assert "mlx5_1:1" not in {card for card, _ in chosen.values()}
    assert chosen[0] == ("mlx5_0:1", "same PCIe switch")
    # GPU 1 (NUMA 1) has no card of its own switch or domain: the least used of the farthest
    assert chosen[1][1] == "across NUMA nodes"


def test_without_switches_the_root_complex_then_the_numa_node_decides(tmp_path):
    gpus = {"gpu0": chain("00", "00:01.0", "01:00.0"), "gpu1": chain("80", "80:01.0", "81:00.0")}
    cards = {
        "mlx5_0:1": chain("40", "40:01.0", "41:00.0"),
        "mlx5_1:1": chain("80", "80:03.0", "83:00.0"),
        "mlx5_2:1": chain("c0", "c0:01.0", "c1:00.0"),
    }
    numa = {"pci0000:00": 0, "pci0000:40": 0, "pci0000:80": 1, "pci0000:c0": 1}
    sysfs, node_gpus = build_sysfs(tmp_path, gpus, cards, numa)
    assert node_map(sysfs, node_gpus) == {0: ("mlx5_0:1", "same NUMA node"), 1: ("mlx5_1:1", "same root complex")}


@pytest.mark.parametrize("topology", [one_hca, no_hca])
def test_ucx_is_left_alone_with_one_card_or_none(tmp_path, topology):
    sysfs, gpus = topology(tmp_path)
    card, text = nic.choose({"CUDA_VISIBLE_DEVICES": "0"}, gpus=gpus, sysfs=sysfs, topo_text="")
    assert card is None
    assert text == " (GPU 0): fewer than two network cards here, UCX left to choose"
    assert nic.map_lines(gpus, {}, sysfs, "")[0].endswith("UCX left to choose")


def test_a_worker_gets_its_own_gpu_s_card(tmp_path):
    sysfs, gpus = dgx_h100(tmp_path)
    # dask-cuda's worker 5 sees its own GPU first: CUDA_VISIBLE_DEVICES=5,6,7,0,1,2,3,4
    card, text = nic.choose({"CUDA_VISIBLE_DEVICES": "5,6,7,0,1,2,3,4"}, gpus=gpus, sysfs=sysfs, topo_text="")
    assert card == "mlx5_9:1"
    assert text == " (GPU 0000:c3:00.0) -> mlx5_9:1, same PCIe switch"
    # a UUID in CUDA_VISIBLE_DEVICES names the GPU as well
    assert nic.choose({"CUDA_VISIBLE_DEVICES": gpus[2].uuid}, gpus=gpus, sysfs=sysfs, topo_text="")[0] == "mlx5_4:1"


def test_the_user_s_ucx_net_devices_wins(tmp_path):
    sysfs, gpus = dgx_h100(tmp_path)
    environ = {"CUDA_VISIBLE_DEVICES": "3", "UCX_NET_DEVICES": "mlx5_0:1"}
    card, text = nic.choose(environ, gpus=gpus, sysfs=sysfs, topo_text="")
    assert card is None
    assert text == ": UCX_NET_DEVICES=mlx5_0:1 was set for this job and is kept"
    assert nic.map_lines(gpus, {"UCX_NET_DEVICES": "mlx5_0:1"}, sysfs, "") == [
        "UCX_NET_DEVICES=mlx5_0:1 is set here and would be kept for every worker"
    ]


def test_a_pinned_map_beats_the_topology(tmp_path):
    sysfs, gpus = juwels_booster(tmp_path)
    environ = {"CUDA_VISIBLE_DEVICES": "1", "GPUJOBQUEUE_NIC_MAP": "0=mlx5_3:1, 0000:45:00.0=mlx5_2:1"}
    card, text = nic.choose(environ, gpus=gpus, sysfs=sysfs, topo_text="")
    assert text == " (GPU 0000:45:00.0) -> mlx5_2:1, pinned by GPUJOBQUEUE_NIC_MAP"
    assert card == "mlx5_2:1"
    # a malformed map is said in the log, and UCX is left alone: the worker still starts
    environ = {"CUDA_VISIBLE_DEVICES": "1", "GPUJOBQUEUE_NIC_MAP": "mlx5_2:1"}
    card, text = nic.choose(environ, gpus=gpus, sysfs=sysfs, topo_text="")
    assert card is None and "not GPU=card" in text


def test_named_interfaces_stand_in_where_there_is_no_infiniband(tmp_path):
    sysfs, gpus = no_hca(tmp_path)
    for name, path in (("hsn0", chain("01", "01:02.0", "0a:00.0")), ("hsn1", chain("41", "41:02.0", "4a:00.0"))):
        device = Path(sysfs) / "devices" / path
        device.mkdir(parents=True)
        (Path(sysfs) / "bus" / "pci" / "devices" / path.rsplit("/", 1)[1]).symlink_to(device)
        (Path(sysfs) / "class" / "net" / name).mkdir(parents=True)
        (Path(sysfs) / "class" / "net" / name / "device").symlink_to(device)
    chosen = node_map(sysfs, gpus, {"GPUJOBQUEUE_NIC_NAMES": "hsn0,hsn1"})
    assert chosen == {0: ("hsn0", "same root complex"), 1: ("hsn1", "same root complex")}
    assert node_map(sysfs, gpus) == {}


# nvidia-smi topo -m of a DGX H100, in the format of the driver 535+ (NIC columns, NIC legend),
# written from the User Guide's pairing above (each GPU PIX with its own card, NODE with the other
# cards of its CPU, SYS across); the four storage cards omitted.
DGX_H100_TOPO = """\
\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tNIC1\tNIC2\tNIC3\tNIC4\tNIC5\tNIC6\tNIC7\
\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tPIX\tNODE\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A
GPU1\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNODE\tPIX\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A
GPU2\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNODE\tNODE\tPIX\tNODE\tSYS\tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A
GPU3\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNODE\tNODE\tNODE\tPIX\tSYS\tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A
GPU4\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tSYS\tSYS\tSYS\tSYS\tPIX\tNODE\tNODE\tNODE\t56-111,168-223\t1\t\tN/A
GPU5\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tSYS\tSYS\tSYS\tSYS\tNODE\tPIX\tNODE\tNODE\t56-111,168-223\t1\t\tN/A
GPU6\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\tPIX\tNODE\t56-111,168-223\t1\t\tN/A
GPU7\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\tNODE\tPIX\t56-111,168-223\t1\t\tN/A
NIC0\tPIX\tNODE\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t X \tNODE\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_3
  NIC2: mlx5_4
  NIC3: mlx5_5
  NIC4: mlx5_6
  NIC5: mlx5_9
  NIC6: mlx5_10
  NIC7: mlx5_11
"""

# The older format (drivers before 470 or so): the cards' names head their columns. A JUWELS
# Booster-like node, written from the layout above; GPU0-GPU1 across sockets.
JUWELS_TOPO_OLD = """\
        GPU0    GPU1    GPU2    GPU3    mlx5_0  mlx5_1  mlx5_2  mlx5_3  CPU Affinity
GPU0     X      NV4     NV4     NV4     PXB     SYS     SYS     SYS     18-23
GPU1    NV4      X      NV4     NV4     SYS     PXB     SYS     SYS     6-11
GPU2    NV4     NV4      X      NV4     SYS     SYS     PXB     SYS     42-47
GPU3    NV4     NV4     NV4      X      SYS     SYS     SYS     PXB     30-35
mlx5_0  PXB     SYS     SYS     SYS      X      SYS     SYS     SYS
"""


def test_topo_matrix_is_read_in_both_formats():
    assert nic.parse_topo_matrix(DGX_H100_TOPO)[5] == {
        "mlx5_0:1": (3, 0),
        "mlx5_3:1": (3, 0),
        "mlx5_4:1": (3, 0),
        "mlx5_5:1": (3, 0),
        "mlx5_6:1": (2, 0),
        "mlx5_9:1": (0, 0),
        "mlx5_10:1": (2, 0),
        "mlx5_11:1": (2, 0),
    }
    assert nic.parse_topo_matrix(JUWELS_TOPO_OLD)[2] == {
        "mlx5_0:1": (3, 0),
        "mlx5_1:1": (3, 0),
        "mlx5_2:1": (0, 1),
        "mlx5_3:1": (3, 0),
    }
    assert nic.parse_topo_matrix("") == {}


@pytest.mark.parametrize(
    "topology, text, expected",
    [
        (dgx_h100, DGX_H100_TOPO, {i: f"{card}:1" for i, (_, card, _) in enumerate(DGX_H100_PAIRS)}),
        (juwels_booster, JUWELS_TOPO_OLD, {i: f"mlx5_{i}:1" for i in range(4)}),
    ],
)
def test_topo_matrix_places_the_cards_where_sys_has_no_pci_tree(tmp_path, topology, text, expected):
    sysfs, gpus = topology(tmp_path, pci=False)
    assert nic.sysfs_distance(gpus[0].bus_id, nic.infiniband_cards(sysfs)[0].bus_id, sysfs) is None
    assert {i: card for i, (card, _) in node_map(sysfs, gpus, topo_text=text).items()} == expected
    # neither /sys nor nvidia-smi places them: nothing is chosen, the worker says so
    count = 12 if topology is dgx_h100 else 4
    card, text = nic.choose({"CUDA_VISIBLE_DEVICES": "0"}, gpus=gpus, sysfs=sysfs, topo_text="")
    assert text.endswith(f"no card placed near it among {count}, UCX left to choose")
    assert card is None


def test_gpu_queries_are_read_from_nvidia_smi_s_csv():
    text = (
        "0, GPU-8a4e6f1c-aaaa-bbbb-cccc-000000000001, 00000000:1B:00.0\n"
        "1, GPU-8a4e6f1c-aaaa-bbbb-cccc-000000000002, 00000000:43:00.0\n"
    )
    assert nic.parse_gpu_query(text) == [
        Gpu(0, "GPU-8a4e6f1c-aaaa-bbbb-cccc-000000000001", "0000:1b:00.0"),
        Gpu(1, "GPU-8a4e6f1c-aaaa-bbbb-cccc-000000000002", "0000:43:00.0"),
    ]


@RECORDED_GPUS_ONLY
def test_each_nanny_sets_its_worker_s_card_in_the_environment_it_gives_it_and_logs_it(tmp_path, monkeypatch):
    # As distributed runs a nanny preload: dask_setup(nanny) before the nanny starts its worker; nvidia-smi
    # (NVML is absent here) and the recorded /sys of a DGX H100 name the node.
    sysfs, _ = dgx_h100(tmp_path)
    fake_nvidia_smi(tmp_path, monkeypatch)
    monkeypatch.setenv("GPUJOBQUEUE_SYSFS", sysfs)
    monkeypatch.delenv("UCX_NET_DEVICES", raising=False)
    nanny = SimpleNamespace(name="job-3-1", env={"CUDA_VISIBLE_DEVICES": "5,6,7,0,1,2,3,4"})
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        asyncio.run(nic.dask_setup(nanny))
    assert nanny.env["UCX_NET_DEVICES"] == "mlx5_9:1"
    assert "UCX_NET_DEVICES" not in os.environ, "the nanny's own environment is left alone"
    assert stderr.getvalue() == "gpujobqueue: worker job-3-1 (GPU 0000:c3:00.0) -> mlx5_9:1, same PCIe switch\n"
    # a UCX_NET_DEVICES of the job's is kept, and said
    monkeypatch.setenv("UCX_NET_DEVICES", "mlx5_0:1")
    nanny = SimpleNamespace(name="job-3-0", env={"CUDA_VISIBLE_DEVICES": "2"})
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        asyncio.run(nic.dask_setup(nanny))
    assert "UCX_NET_DEVICES" not in nanny.env
    assert (
        stderr.getvalue() == "gpujobqueue: worker job-3-0: UCX_NET_DEVICES=mlx5_0:1 was set for this job and is kept\n"
    )


@pytest.mark.parametrize("mode", ["dask-cuda", "per-device"])
def test_the_card_choice_is_an_opt_in_each_nanny_preloads(mode):
    keywords = {
        "cpus_per_gpu": 1,
        "memory_per_gpu": "512MiB",
        "gpus_per_node": 2,
        "protocol": "ucx",
        "worker_mode": mode,
    }
    default = job_script_for("slurm", keywords, name="job-1")
    assert "nic_affinity" not in default and "UCX_NET_DEVICES" not in default  # UCX chooses its cards
    chosen = job_script_for("slurm", {**keywords, "nic_affinity": True}, name="job-1")
    nanny_preload = {
        "dask-cuda": "DASK_DISTRIBUTED__NANNY__PRELOAD=gpujobqueue.preloads.nic_affinity \\\n",
        "per-device": "    --preload-nanny gpujobqueue.preloads.nic_affinity \\\n",
    }
    assert nanny_preload[mode] in chosen and "UCX_NET_DEVICES" in chosen  # the comment says what it sets


@pytest.mark.parametrize(
    "keywords, says",
    [
        ({"worker_mode": "per-device", "nanny": False}, "nanny=False gives none"),
        ({"worker_mode": "per-device", "visibility_variable": "ROCR_VISIBLE_DEVICES"}, "not ROCR_VISIBLE_DEVICES"),
        ({"nic_affinity": "sometimes"}, "expected true or false"),
    ],
)
def test_nic_affinity_is_refused_where_no_nanny_could_choose_an_nvidia_gpu_s_card(keywords, says):
    with pytest.raises(ValidationError, match=f"^nic_affinity: .*{says}"):
        job_script_for(
            "slurm", {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "nic_affinity": True, **keywords}, name="w"
        )


def test_a_site_turns_it_on_with_network_nic_affinity(tmp_path):
    from gpujobqueue.sites import load_site

    site = load_site("perlmutter")
    data = {**site.data, "name": "rails", "network": {**site.data["network"], "nic_affinity": True}}
    path = tmp_path / "rails.yaml"
    path.write_text(yaml.safe_dump(data))
    script = job_script_for(str(path), {"account": "m1234_g"}, name="w")
    assert "gpujobqueue.preloads.nic_affinity" in script
    assert "gpujobqueue.preloads.nic_affinity" not in job_script_for("perlmutter", {"account": "m1234_g"}, name="w")


def test_a_local_job_without_gpus_or_cards_still_computes_and_logs_each_worker(tmp_path, monkeypatch):
    # No GPU, even on the GPU machine, where distributed's NVML would refuse stand-in device 1.
    monkeypatch.setenv("DASK_DISTRIBUTED__DIAGNOSTICS__NVML", "False")
    logs = tmp_path / "logs"
    keywords = dict(
        gpus_per_node=2,
        worker_mode="per-device",
        memory_per_gpu="512MiB",
        devices=["0", "1"],
        death_timeout=20,
        log_directory=str(logs),
        shared_temp_directory=str(tmp_path),
        nic_affinity=True,
    )
    with LocalGPUCluster(**keywords) as cluster, Client(cluster) as client:
        cluster.scale(gpus=2)
        client.wait_for_workers(2, timeout=60)
        assert da.ones((100, 100), chunks=10).sum().compute() == 10000
        unset = dict.fromkeys(client.scheduler_info()["workers"], None)
        assert client.run(lambda: os.environ.get("UCX_NET_DEVICES")) == unset
        names = sorted(w["name"] for w in client.scheduler_info()["workers"].values())
    text = "".join(path.read_text() for path in logs.iterdir())
    for name, device in zip(names, ("0", "1")):
        expected = (
            f"gpujobqueue: worker {name} (GPU {device}): fewer than two network cards here, UCX left to choose"
            if len(nic.infiniband_cards()) < 2
            else f"gpujobqueue: worker {name} (GPU"
        )
        assert expected in text


def test_check_on_a_gpu_node_prints_the_map(tmp_path, monkeypatch):
    from gpujobqueue import diagnostics
    from gpujobqueue.diagnostics import facts as machine_facts
    from gpujobqueue.machine.gpus import GPU, MachineGPUs

    sysfs, gpus = juwels_booster(tmp_path)
    machine = MachineGPUs(tuple(GPU(i, "NVIDIA A100", 40 * 2**30, 12) for i in range(4)), "NVML", None, "580.1", "13.0")
    monkeypatch.setattr(machine_facts, "machine_gpus", lambda: machine)
    monkeypatch.setattr(machine_facts, "map_lines", lambda: nic.map_lines(gpus, {}, sysfs, ""))
    facts = diagnostics.gather_facts(batch="local")
    text = diagnostics.report(diagnostics.judge(facts), facts)
    for i, gpu in enumerate(gpus):
        assert "INFO  network cards" in text and f"GPU {i} ({gpu.bus_id}) -> mlx5_{i}:1, same PCIe switch" in text
    assert "UCX chooses the workers' cards; with nic_affinity=True:" in text  # a diagnosis, not what workers get
    # no GPU here: no map, no line
    monkeypatch.setattr(machine_facts, "machine_gpus", lambda: MachineGPUs((), None, "no NVML", None, None))
    assert diagnostics.gather_facts(batch="local").nic_map == []


def test_a_malformed_pinned_map_is_refused_before_any_script_is_written():
    from gpujobqueue import ValidationError

    for bad in ("mlx5_1:1", "0=mlx5_0:1;reboot", "0=", "=mlx5_0:1"):
        with pytest.raises(ValidationError, match=r"^environment\[GPUJOBQUEUE_NIC_MAP\]: .*is not GPU=card"):
            job_script_for("slurm", {"environment": {"GPUJOBQUEUE_NIC_MAP": f"1=mlx5_1:1,{bad}"}}, name="job-1")
    pinned = {"GPUJOBQUEUE_NIC_MAP": "0=mlx5_0:1, GPU-8a4e=mlx5_1:1"}
    script = job_script_for(
        "slurm", {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "environment": pinned}, name="job-1"
    )
    assert "export GPUJOBQUEUE_NIC_MAP='0=mlx5_0:1, GPU-8a4e=mlx5_1:1'" in script


FAKE_NVIDIA_SMI = """#!/bin/sh
# nvidia-smi --query-gpu=index,uuid,pci.bus_id --format=csv,noheader on a DGX H100
i=0
for bus in 1B 43 52 61 9D C3 D1 DF; do
    echo "$i, GPU-0000000$i-fake, 00000000:$bus:00.0"
    i=$((i + 1))
done
"""


def fake_nvidia_smi(tmp_path: Path, monkeypatch) -> None:
    """nvidia-smi of a DGX H100 first on PATH (NVML is absent here)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
    (bin_dir / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


@RECORDED_GPUS_ONLY
@pytest.mark.parametrize("nic_affinity", [False, True])
def test_a_real_job_on_a_recorded_dgx_h100_leaves_ucx_its_cards_unless_asked(tmp_path, monkeypatch, nic_affinity):
    # The whole path: the workers' nannies in real processes, nvidia-smi, the recorded /sys, the
    # environment the workers run with and the job log. By default UCX chooses: no UCX_NET_DEVICES.
    sysfs, _ = dgx_h100(tmp_path)
    fake_nvidia_smi(tmp_path, monkeypatch)
    monkeypatch.setenv("GPUJOBQUEUE_SYSFS", sysfs)
    monkeypatch.delenv("UCX_NET_DEVICES", raising=False)
    logs = tmp_path / "logs"
    keywords = dict(
        gpus_per_node=2,
        worker_mode="per-device",
        memory_per_gpu="512MiB",
        devices=["5", "2"],
        death_timeout=20,
        log_directory=str(logs),
        shared_temp_directory=str(tmp_path),
        **({"nic_affinity": True} if nic_affinity else {}),
    )
    with LocalGPUCluster(**keywords) as cluster, Client(cluster) as client:
        cluster.scale(gpus=2)
        client.wait_for_workers(2, timeout=60)
        assert da.ones((100, 100), chunks=10).sum().compute() == 10000
        seen = client.run(
            lambda dask_worker: (
                dask_worker.name,
                os.environ["CUDA_VISIBLE_DEVICES"],
                os.environ.get("UCX_NET_DEVICES"),
            )
        )
    expected = {"5": ("0000:c3:00.0", "mlx5_9:1"), "2": ("0000:52:00.0", "mlx5_4:1")}
    assert sorted(device for _, device, _ in seen.values()) == ["2", "5"]
    text = "".join(path.read_text() for path in logs.iterdir())
    if not nic_affinity:
        assert [card for _, _, card in seen.values()] == [None, None]
        assert "gpujobqueue: worker " not in text
        return
    for name, device, card in seen.values():
        assert card == expected[device][1]
        assert f"gpujobqueue: worker {name} (GPU {expected[device][0]}) -> {card}, same PCIe switch\n" in text
