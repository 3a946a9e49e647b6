#!/usr/bin/env bash
# One device call: the demo (dask-cuda workers on every GPU) and the tests that need no batch system.
# Run from the repository root with the wheels of shared/gpu/README.md installed on PYTHONPATH.
# Writes five files to $OUT (the device tool brings back at most eight): versions.txt, demo.txt
# (each size's output), demo-logs.txt (their stderr and job logs), check.txt, pytest.txt.
set -o pipefail
out="${OUT:-/tmp/gpujobqueue-gpu}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{
    nvidia-smi -L
    python3 -c "import dask, distributed, dask_cuda, cupy; print('dask', dask.__version__, 'dask-cuda', dask_cuda.__version__, 'cupy', cupy.__version__)"
} 2>&1 | tee "$out/versions.txt"
: >"$out/demo-logs.txt"
for size in small medium large; do
    echo "== gpujobqueue demo --size $size" | tee -a "$out/demo.txt"
    python3 -m gpujobqueue.cli demo --size "$size" 2>"$out/demo-$size.err" | tee "$out/demo-$size.out" | tee -a "$out/demo.txt"
    log=$(sed -n 's/^  log: *\([^ ]*\) .*/\1/p' "$out/demo-$size.out" | head -1)
    {
        echo "== demo --size $size: stderr"
        cat "$out/demo-$size.err"
        echo "== demo --size $size: job log $log"
        [ -n "$log" ] && [ -f "$log" ] && cat "$log"
    } >>"$out/demo-logs.txt"
    rm -f "$out/demo-$size.err" "$out/demo-$size.out"
done
echo "== gpujobqueue check (this host: GPUs, network cards, the GPU <-> card map)"
python3 -m gpujobqueue.cli check 2>&1 | tee "$out/check.txt"
# TESTS: the test files to run (default: those that use the GPU or read its topology; the whole
# suite needs the batch systems' daemons, which this machine has not).
echo "== pytest ${TESTS:=tests/runtime/test_gpu.py tests/runtime/test_nic_affinity.py tests/cli/test_demo.py}"
python3 -m pytest -q -p no:logging -m "not slurm and not sge" -rfEs $TESTS >"$out/pytest.txt" 2>&1
grep -E "^(FAILED|ERROR|SKIPPED)|passed|failed" "$out/pytest.txt"
