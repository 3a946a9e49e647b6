"""The corpus of published dask-jobqueue snippets in CI (issue 31): each snippet of tests/corpus/ (its source in
its docstring) is built both ways, dask-jobqueue as written and with the import changed, by measure.py; the two
job scripts are compared directive by directive and every worker line is parsed by its worker CLI's own click
command (tests/corpus/_workers.py, as tests/script/test_worker_line_cli.py checks the rendered ones). Each
snippet's outcome is one line of EXPECTED, so that a regression, or a change that makes one better, fails here
until the line says it.

Where gpujobqueue differs on purpose the line names the difference: ``GPUs per node: none → N`` where a GPU
count was given other than by a directive (a ``GPU`` resource in worker_extra_args: gpujobqueue asks for the GPUs
its workers run on). ``no working GPU workers`` is a snippet that wrote no GPU count: gpujobqueue asks for none,
as dask-jobqueue (issue 31, point 9).
TLS, which gpujobqueue adds, is in the worker lines (checked by the CLIs), not in the directives compared.
A line starting ``refused:`` is a snippet gpujobqueue does not accept (docs/corpus-report.md says why).

measure.py builds the clusters with stand-in batch commands (nothing is submitted); as root it runs in a
private network namespace that has the interfaces the snippets name (ib0).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.made_once import made_once

HERE = Path(__file__).resolve().parent
SNIPPETS = sorted(path.stem for path in HERE.glob("*_*.py") if not path.name.startswith(("_", "test_")))

# One line per snippet: its outcome as measure.outcome() writes it.
EXPECTED = {
    "local_djq_606_dask_cuda_worker_command": "n/a (no batch system), GPU workers",
    "lsf_asapdiscovery_lilac_gpu": "same, GPU workers",
    "lsf_cellpose_janelia_gpu": "differs: -gpu (other): none → mode=exclusive_process, GPU workers",  # on purpose: gpujobqueue's gpu_mode (docs/migrating.md)
    "lsf_djq_352_csm": "same",
    "lsf_djq_docs_examples": "same",
    "lsf_openff_evaluator_gpu": "same, GPU workers",
    "lsf_openff_evaluator_no_nanny": "same, GPU workers",  # issue 42
    "lsf_summit_blog": "same",
    "lsf_summit_blog_config": "same",
    "pbs_cheyenne_config": "same",
    "pbs_djq_docs_examples": "same",
    "pbs_djq_docs_lifetime": "same (memory rounded)",
    "pbs_ncar_esds_casper": "same",
    "pbs_ncar_gpu_workshop": "same, GPU workers",
    "sge_djq_docs_m_mem_free": "refused: JobSizeMissingError: cores",  # as dask-jobqueue: the example gives no cores
    "sge_elfantasma_gpu": "same, GPU workers",
    "sge_parakeet_gpu": "dask-jobqueue fails: ValueError: Got unexpected keyword argument 'nthreads'. Very likely this unexpected parameter was passed in \"job_kwargs\" in the SGECluster constructor:",
    "slurm_aics_pipeline_qc_cell_seg_cli": "same (memory rounded), GPU workers",
    "slurm_aics_pipeline_qc_cell_seg_nanny": "refused: ValidationError: worker_extra_args",
    "slurm_aics_pipeline_qc_nanny_false_gpu": "same (memory rounded), GPU workers",
    "slurm_argo_deepmsi_lazyslide": "same (memory rounded), GPU workers",
    "slurm_athena_zaratan_gpus_per_task": "same (memory rounded), GPU workers",
    "slurm_banis_affinity_inference": "same (memory rounded), GPU workers",
    "slurm_comet_config": "same",
    "slurm_cori_config": "same (memory rounded)",
    "slurm_dask_cuda_980_juwels": "same (memory rounded), GPU workers",
    "slurm_dask_slurm_tutorial_gres": "same (memory rounded), GPU workers",
    "slurm_dask_slurm_tutorial_rtx4500": "same (memory rounded), GPU workers",
    "slurm_djq_304_gres_resources": "same (memory rounded), GPU workers",
    "slurm_djq_docs_gpu_resources": "differs: GPUs per node: none → 2, GPU workers",
    "slurm_djq_docs_savio_lowprio": "same (memory rounded)",
    "slurm_espnet3_parallel_gpu_config": "same (memory rounded), GPU workers",  # issue 42
    "slurm_holowizard_pipe_gpu": "workers refused: `distributed.cli.dask_worker`: ModuleNotFoundError: No module named 'holowizard'",  # issue 42
    "slurm_jean_zay_tf_mnist": "same (memory rounded), GPU workers",
    "slurm_jean_zay_xarray": "dask-jobqueue fails: ValueError: Got unexpected keyword argument 'env'. Very likely this unexpected parameter was passed in \"job_kwargs\" in the SLURMCluster constructor:",
    "slurm_juqueue_jureca_dc_gpu": "same (memory rounded), GPU workers",
    "slurm_keeling_gist_config": "same (memory rounded)",
    "slurm_lazyslide_tutorial_h100": "same (memory rounded), GPU workers",
    "slurm_mlip_arena_perlmutter": "same, GPU workers",
    "slurm_mlip_arena_stability_preempt": "same, GPU workers",
    "slurm_nesi_dask_demos_gpu": "same, GPU workers",
    "slurm_niaid_em_workflows_gpu": "same (memory rounded), GPU workers",
    "slurm_nilm_nas_epscor": "same, GPU workers",
    "slurm_nomelt_hyak_config": "same (memory rounded), GPU workers",
    "slurm_openff_evaluator_pr362_v100": "same, GPU workers",
    "slurm_pawsey_ella_gpu": "same, GPU workers",
    "slurm_pawsey_setonix_gpu": "same, no working GPU workers",
    "slurm_psweep_jax_gpu": "same, GPU workers",
    "slurm_scaling_python_with_dask": "same, GPU workers",
    "slurm_smac3_docs": "same (memory rounded)",
    "slurm_spsim_scarf_gpu": "same (memory rounded), GPU workers",
    "slurm_steinsense_sherlock_gpu": "same, GPU workers",
    "slurm_swc_gpu_partition": "same (memory rounded), no working GPU workers",
    "slurm_tennis_hpc_xgboost_a100": "same (memory rounded), GPU workers",
    "slurm_weecology_boem_nanny": "same (memory rounded), GPU workers",
    "slurm_weecology_everglades": "same (memory rounded), GPU workers",
    "slurm_weecology_neon_crown_maps": "refused: ValidationError: dashboard_address",  # as dask-jobqueue since 0.7.1: scheduler_options
    "slurm_zih_alpha_dask_test": "same (memory rounded), no working GPU workers",
    "slurm_zih_alpha_docs": "same (memory rounded), no working GPU workers",
}


def measure(folder: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    result = subprocess.run(
        [sys.executable, str(HERE / "measure.py"), "--json", str(folder / "outcomes.json")],
        env=clean,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, str]:
    """Every snippet's outcome, measured once for the test session (whichever worker comes first)."""
    return json.loads((made_once(tmp_path_factory, "corpus", measure) / "outcomes.json").read_text())


def test_every_snippet_has_its_expected_line():
    assert sorted(EXPECTED) == SNIPPETS


@pytest.mark.parametrize("snippet", SNIPPETS)
def test_the_snippet_gives_its_expected_outcome(outcomes, snippet):
    assert outcomes[snippet] == EXPECTED.get(snippet)


def test_each_gpu_snippet_gives_the_same_request_with_working_gpu_workers_or_says_why(outcomes):
    """Issue 31's criterion, held to the measured outcomes: every snippet written for GPUs is the same
    request with working GPU workers, or is in _short.SHORT_OF_THE_CRITERION with its reason; and no reason is
    kept for a snippet that now meets it."""
    sys.path.insert(0, str(HERE))
    from _short import SHORT_OF_THE_CRITERION, meets_the_criterion
    from measure import load

    gpu = [name for name in SNIPPETS if load(HERE / f"{name}.py").MEANT.get("gpus_per_job") != 0]
    short = sorted(name for name in gpu if not meets_the_criterion(outcomes[name]))
    assert short == sorted(SHORT_OF_THE_CRITERION)
    assert len(gpu) - len(short) >= 24, f"{len(gpu) - len(short)} of {len(gpu)} GPU snippets meet the criterion"
