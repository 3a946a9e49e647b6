"""The GPU snippets of the corpus that do not give the same request with working GPU workers, each with
why (issue 31: "the others documented with the reason"). tests/corpus/test_corpus.py holds this list to
the measured outcomes both ways; measure.py writes it into docs/corpus-report.md."""

SHORT_OF_THE_CRITERION = {
    "local_djq_606_dask_cuda_worker_command": "no batch system: a LocalCluster-style start of dask-cuda workers, "
    "so no request to compare (its GPU workers work)",
    "lsf_cellpose_janelia_gpu": "differs on purpose: a -gpu line with no mode= gets gpujobqueue's gpu_mode "
    "(exclusive_process), LSF's own default is shared (docs/migrating.md)",
    "sge_parakeet_gpu": "dask-jobqueue refuses it too: SGECluster takes no nthreads keyword",
    "slurm_aics_pipeline_qc_cell_seg_nanny": "the worker arguments are malformed as published "
    "(--resources GPU=1,nthreads4): refused naming worker_extra_args; its well-formed sibling passes",
    "slurm_djq_docs_gpu_resources": "differs on purpose: a GPU resource given to the workers makes gpujobqueue ask "
    "the batch system for those GPUs (dask-jobqueue asks for none)",
    "slurm_holowizard_pipe_gpu": "its prologue starts workers of its own that preload the project's module "
    "(holowizard), not installed here, so their lines do not parse either way; the request is the same (memory "
    "rounded) and no GPU count is written (a --constraint only): no GPU asked, as dask-jobqueue",
    "slurm_pawsey_setonix_gpu": "no GPU count written (the GPU partition and account only): no GPU asked, as "
    "dask-jobqueue",
    "slurm_swc_gpu_partition": "no GPU count written (the gpu partition only): no GPU asked, as dask-jobqueue",
    "slurm_weecology_neon_crown_maps": "refused as dask-jobqueue refuses it since 0.7.1: dashboard_address goes "
    "through scheduler_options",
    "slurm_zih_alpha_dask_test": "no GPU count written (the alpha partition only): no GPU asked, as dask-jobqueue",
    "slurm_zih_alpha_docs": "no GPU count written (the alpha partition and a gpu=1 resource of another name): no "
    "GPU asked, as dask-jobqueue",
}


def meets_the_criterion(outcome: str) -> bool:
    """Whether a snippet's outcome line (measure.outcome) is the same request with working GPU workers."""
    return outcome.startswith("same") and outcome.endswith(", GPU workers")
