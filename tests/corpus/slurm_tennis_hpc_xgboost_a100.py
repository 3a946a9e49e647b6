"""A tennis match prediction thesis ("Data Analytics with HPC"): XGBoost hyper-parameter search on A100s.

Source: PaulSerin/Data-Analytics-with-HPC, Code/3.Training/XGBoost/hyperparam_tune_xgb_dask.py at commit
09e49e46f5c954dd390c7067eefc8e0862d04473, ``main()``, "Launch SLURMCluster and Dask client"
(https://github.com/PaulSerin/Data-Analytics-with-HPC/blob/09e49e46f5c954dd390c7067eefc8e0862d04473/Code/3.Training/XGBoost/hyperparam_tune_xgb_dask.py).
Date: not shown.
Batch system: SLURM (partition ``short``, account ``ulc``; the cluster is not named in the file).
Meant: one A100 per job (``--gres=gpu:a100:1``, a typed GRES), one worker of 32 threads per job training
``XGBClassifier(device="cuda")``; the scheduler closes itself after two idle minutes (``idle_timeout``).
"""

SOURCE = {
    "repo": "PaulSerin/Data-Analytics-with-HPC",
    "path": "Code/3.Training/XGBoost/hyperparam_tune_xgb_dask.py",
    "commit": "09e49e46f5c954dd390c7067eefc8e0862d04473",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:a100:1, cores=32, scheduler idle_timeout"}


def make(module):
    cluster = module.SLURMCluster(
        queue="short",
        account="ulc",
        cores=32,
        processes=1,
        memory="40GB",
        walltime="02:00:00",
        job_extra_directives=["--gres=gpu:a100:1"],
        scheduler_options={"idle_timeout": "120s"},
    )
    return cluster
