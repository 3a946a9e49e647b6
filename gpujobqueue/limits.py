"""Bounds on every size a keyword, option or site file can ask for, and on every interval and
count of a cluster's own loops (below).

Each is far above what a real machine offers, and low enough that nothing gpujobqueue builds
for it (a worker name per GPU, a device list, a job per array element) can exhaust the host
that renders the script. A value past a bound is refused, naming its keyword, before anything
is allocated for it.
"""

from __future__ import annotations

MAX_NODES = 10_000  # nodes per job; the largest machines have about 9,500 GPU nodes
MAX_GPUS_PER_NODE = 64  # GPUs per node; today's densest nodes have 8 to 16
MAX_CPUS_PER_NODE = 4096  # cores (or hardware threads) per node
MAX_THREADS_PER_WORKER = 4096
MAX_MEMORY_BYTES = 2**46  # 64 TiB: host memory per node, or device memory per GPU
MAX_WALLTIME_SECONDS = 365 * 86400  # a year; batch systems refuse or mangle longer ones
MAX_WAIT_SECONDS = 7 * 86400  # death_timeout, workers' start timeout: a week
MAX_JOBS_PER_CLUSTER = 10_000  # jobs one scale() may ask for

# The cluster's own loops (dask config gpujobqueue.*, adapt()'s keywords): how often each runs,
# refused outside these before the cluster starts. Their defaults are in gpujobqueue.yaml.
MIN_JOB_POLL_SECONDS = 1.0  # a status query (squeue, qstat, bjobs) a second at most: the controller is shared
MIN_LOOK_SECONDS = 0.1  # adapt's looks and the usage samples, work of this process: ten a second at most
MAX_INTERVAL_SECONDS = 3600  # every loop looks once an hour at least: a failed job is not missed longer
MIN_QUERY_TIMEOUT_SECONDS = 1.0  # a loaded controller may take a second; a query stopped sooner is no outage
MAX_QUERY_TIMEOUT_SECONDS = 3600
MAX_ADAPT_WAIT_COUNT = 10_000  # looks at a lower need; adapt keeps up to 3 x this many needs in memory
MAX_REPLACE_FAILURES = 100  # failed jobs in a row, each one submitted, before the replacing stops

# Site files: a site is a page of YAML; these keep a hostile one from using up memory or time.
MAX_SITE_FILE_BYTES = 1 << 20  # 1 MiB
MAX_SITE_DEPTH = 16  # nested mappings and lists
MAX_PATTERN_INPUT = 128  # characters of an account or host name matched against a site pattern
MAX_PATTERN_REPEATS = 3  # unbounded repeats (*, +, {n,}) in one site pattern

# The scheduler file a job's scheduler writes (its address; distributed's is a few hundred bytes).
MAX_SCHEDULER_FILE_BYTES = 64 << 10

# Usage reports (gpujobqueue/usage.py): a cluster's jobs over its life, replacements included.
MAX_USAGE_JOBS = 100_000  # job records one report keeps
MAX_USAGE_FILE_BYTES = 64 << 20  # 64 MiB: a report of MAX_USAGE_JOBS jobs fits
