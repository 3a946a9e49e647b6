#!/usr/bin/env bash
# One device call: the demo (dask-cuda workers on every GPU) and the tests that need no batch system.
# Run from the repository root with the wheels of shared/gpu/README.md installed on PYTHONPATH.
set -o pipefail
out="${OUT:-/tmp/gpujobqueue-gpu}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi -L | tee "$out/nvidia-smi.txt"
python3 -c "import dask, distributed, dask_cuda, cupy; print('dask', dask.__version__, 'dask-cuda', dask_cuda.__version__, 'cupy', cupy.__version__)" | tee "$out/versions.txt"
for size in small medium large; do
    echo "== gpujobqueue demo --size $size"
    python3 -m gpujobqueue.cli demo --size "$size" 2>"$out/demo-$size.log" | tee "$out/demo-$size.txt"
    log=$(sed -n 's/^  log: *\([^ ]*\) .*/\1/p' "$out/demo-$size.txt" | head -1)
    [ -n "$log" ] && [ -f "$log" ] && cp "$log" "$out/demo-$size-job.log"
done
echo "== gpujobqueue check (this host: GPUs, network cards, the GPU <-> card map)"
python3 -m gpujobqueue.cli check 2>&1 | tee "$out/check.txt"
grep -h "gpujobqueue: worker" "$out"/demo-*-job.log 2>/dev/null | sort | uniq -c | tee "$out/nic-lines.txt"
# TESTS: the test files to run (default: those that use the GPU or read its topology; the whole
# suite needs the batch systems' daemons, which this machine has not).
echo "== pytest ${TESTS:=tests/test_gpu.py tests/test_nic_affinity.py tests/test_demo.py}"
python3 -m pytest -q -p no:logging -m "not slurm" -rs $TESTS 2>&1 | tail -25 | tee "$out/pytest.txt"
