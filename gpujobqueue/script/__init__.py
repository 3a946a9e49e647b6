"""The job script's templates: ``render(plan, connection)`` (the Jinja environment over templates/, what a batch
system's ``job_script`` submits) and the self-contained ``--run`` scripts. Below the batch systems: it reads a plan
and its batch system, and imports neither."""
