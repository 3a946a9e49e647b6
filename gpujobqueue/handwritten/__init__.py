"""Directives users write by hand, as dask-jobqueue users do (``job_extra_directives``, ``resource_spec``): what a
batch system's own lines say (:mod:`.directives`, :mod:`.gpu_parsers`), adopted into the settings or refused
(:mod:`.gpus`), and the hooks a batch system declares for them (:mod:`.hooks`)."""
