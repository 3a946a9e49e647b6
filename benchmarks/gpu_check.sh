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
done
echo "== pytest (no batch system here: slurm-marked and packaging tests deselected)"
python3 -m pytest -q -p no:logging -m "not slurm" --deselect tests/test_packaging.py -rs tests 2>&1 | tail -25 | tee "$out/pytest.txt"
