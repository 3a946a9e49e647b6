"""The demo's problem sizes, fitted to its GPUs' memory; the nominal sizes are docs/benchmarks.md's (two H200s)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

# (random array side, its chunk side, SVD rows, SVD columns, SVD row chunk)
NOMINAL = {
    "gpu": {
        "small": (20_000, 5_000, 100_000, 100, 10_000),
        "medium": (100_000, 10_000, 1_000_000, 1_000, 100_000),
        "large": (500_000, 10_000, 10_000_000, 1_000, 100_000),
    },
    "cpu": {
        "small": (4_000, 1_000, 20_000, 50, 2_000),
        "medium": (20_000, 2_500, 200_000, 100, 20_000),
        "large": (50_000, 5_000, 2_000_000, 100, 100_000),
    },
}
SIZE_NAMES = tuple(NOMINAL["gpu"])

ITEM_BYTES = 8  # float64
# The share of the smallest GPU's memory the demo plans to use: the rest is margin for CUDA's
# context, cupy's memory pool holding freed blocks, and an uneven spread of chunks.
MEMORY_SHARE = 0.6
THREADS_PER_WORKER = 4  # dask-cuda workers' threads here (up to 4): chunks in flight at once
# Chunk-sized arrays one task holds at once: the random chunk, x + 1 and the strided copy; for
# the SVD's check, u * s, its product with v and the regenerated x.
TEMPORARIES_PER_TASK = 3
# Whole copies of the SVD's input held across the GPUs at its peak: tsqr's first-stage Q
# blocks, u (persisted) as it is built from them, and x's blocks not yet released. On one
# H200 (141 GB) the 74.5 GiB of `large` needed about 3 x 74.5 GiB: cupy's OutOfMemoryError.
SVD_COPIES = 3
# The sum streams its chunks (it never holds the array), so its array may be many times the
# GPUs' memory; this bound keeps its time in proportion to the GPUs (2 TB on one H200).
SUM_ARRAY_PER_GPU_MEMORY = 16
ROUND = 1_000


@dataclass(frozen=True)
class DemoSizes:
    """The random array's side and its chunks', the tall-skinny SVD's shape and row chunks, and why not nominal."""

    side: int
    chunk: int
    rows: int
    cols: int
    row_chunk: int
    fitted: str = ""


def sum_peak_bytes(chunk: int) -> int:
    """Bytes one GPU holds at most for the sum: every thread's temporaries of one chunk."""
    return THREADS_PER_WORKER * TEMPORARIES_PER_TASK * chunk * chunk * ITEM_BYTES


def svd_peak_bytes(rows: int, cols: int, row_chunk: int, gpus: int) -> int:
    """Bytes one GPU holds at most for the SVD: its share of the whole copies and its threads' temporaries."""
    return (
        math.ceil(SVD_COPIES * rows * cols * ITEM_BYTES / gpus)
        + THREADS_PER_WORKER * TEMPORARIES_PER_TASK * row_chunk * cols * ITEM_BYTES
    )


def _round_down(value: float, step: int, least: int) -> int:
    return max(least, int(value) // step * step)


def demo_sizes(size: str, gpu_memories: Sequence[int]) -> DemoSizes:
    """The sizes for ``size`` on GPUs of these memories (none: the CPU sizes): the nominal ones, else the chunks,
    the SVD's rows and the sum's side shrunk until each GPU's peak is at most ``MEMORY_SHARE`` of the smallest."""
    if size not in SIZE_NAMES:
        raise ValueError(f"size must be one of {', '.join(SIZE_NAMES)}, got {size!r}")
    if not gpu_memories:
        return DemoSizes(*NOMINAL["cpu"][size])
    side, chunk, rows, cols, row_chunk = NOMINAL["gpu"][size]
    gpus = len(gpu_memories)
    budget = MEMORY_SHARE * min(gpu_memories)
    # Chunks first: one thread's chunks may take at most half the budget.
    per_chunk_row = THREADS_PER_WORKER * TEMPORARIES_PER_TASK * ITEM_BYTES
    if sum_peak_bytes(chunk) > budget / 2:
        chunk = _round_down(math.isqrt(int(budget / 2 / per_chunk_row)), ROUND, ROUND)
    if per_chunk_row * row_chunk * cols > budget / 2:
        row_chunk = _round_down(budget / 2 / (per_chunk_row * cols), ROUND, max(ROUND, 2 * cols))
    # Then the SVD's rows: its whole copies in what the temporaries leave.
    room = budget - per_chunk_row * row_chunk * cols
    rows = min(rows, _round_down(room * gpus / (SVD_COPIES * cols * ITEM_BYTES), row_chunk, row_chunk))
    side = min(
        side, _round_down(math.isqrt(int(SUM_ARRAY_PER_GPU_MEMORY * sum(gpu_memories) / ITEM_BYTES)), chunk, chunk)
    )
    nominal = NOMINAL["gpu"][size]
    fitted = (side, chunk, rows, cols, row_chunk)
    why = ""
    if fitted != nominal:
        why = (
            f"shrunk from {nominal[0]}² (chunks {nominal[1]}²) and {nominal[2]} x {nominal[3]} "
            f"(row chunks {nominal[4]}) to fit {gpus} GPU(s) of {min(gpu_memories) / 2**30:.0f} GiB (the smallest), "
            f"using at most {MEMORY_SHARE:.0%} of its memory"
        )
    return DemoSizes(*fitted, fitted=why)
