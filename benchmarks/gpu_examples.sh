#!/usr/bin/env bash
# One device call: `gpujobqueue check` on a GPU node, its tests there, and the GPU form of
# every example (a missing library is recorded as the example's exit 3, not hidden).
# Run from the repository root with the wheels of shared/gpu/README.md on PYTHONPATH.
set -o pipefail
out="${OUT:-/tmp/gpujobqueue-gpu}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi -L | tee "$out/nvidia-smi.txt"

echo "== gpujobqueue check"
python3 -m gpujobqueue.cli check | tee "$out/check.txt"; echo "exit $?" | tee -a "$out/check.txt"
python3 -m gpujobqueue.cli check --protocol ucx | tee "$out/check-ucx.txt"; echo "exit $?" | tee -a "$out/check-ucx.txt"
python3 -m gpujobqueue.cli check --json > "$out/check.json"
SLURM_JOB_ID=1 python3 -m gpujobqueue.cli check --site perlmutter > "$out/check-in-a-perlmutter-job.txt"; echo "exit $?" >> "$out/check-in-a-perlmutter-job.txt"

echo "== pytest tests/cli/test_check.py (no batch system here)"
python3 -m pytest -q -p no:logging -m "not slurm and not sge" tests/cli/test_check.py 2>&1 | tail -5 | tee "$out/pytest-check.txt"

summary="$out/examples.txt"
: > "$summary"
run_example() {  # name, then its arguments
    local name="$1"; shift
    local log="$out/example-${name%.py}-$(echo "$*" | tr -c 'a-z0-9' '-' | sed 's/-*$//').txt"
    local start=$SECONDS
    timeout 900 python3 "examples/$name" --form gpu "$@" > "$log" 2>&1
    local status=$?
    printf '%-24s %-22s exit %-3s %4ss  %s\n' "$name" "$*" "$status" "$((SECONDS - start))" "$(grep -E '^RESULT|MISSING' "$log" | tail -1)" | tee -a "$summary"
}
echo "== examples, GPU form"
run_example cupy_arrays.py --size small
run_example cupy_arrays.py --size large
run_example delayed_model_fits.py --size medium
run_example mixed_pool.py --size small
run_example torch_ddp.py --size small
run_example dataframes.py --size small
echo "== summary"
cat "$summary"
