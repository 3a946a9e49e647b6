"""A tutorial for the Sainsbury Wellcome Centre's cluster: workers sent to the GPU partition.

Source: https://pastebin.com/67xsXBWC ("full credit to Matthew Rocklin [NVIDIA] - modified by
Naureen Ghani for [SWC HPC]").
Date: not shown.
Batch system: SLURM (SWC HPC, UCL).
Meant: workers on the ``gpu`` partition ("must specify gpu partition if needed, goes to cpu by
default"), six processes per job, locale set through ``env_extra``; no GPU directive written.
"""

SOURCE = {"url": "https://pastebin.com/67xsXBWC", "date": "date not shown"}
BATCH = "slurm"
MEANT = {"gpus_per_job": None, "note": "gpu partition, no GPU directive; processes=6"}


def make(module):
    cluster = module.SLURMCluster(
        queue="gpu",
        processes=6,
        cores=24,
        memory="2GB",
        env_extra=['export LANG="en_US.utf8"', 'export LANGUAGE="en_US.utf8"', 'export LC_ALL="en_US.utf8"'],
    )
    return cluster
