"""Bounds on every size a keyword, option or site file can ask for, and on every interval and count of a
cluster's own loops (below): each far above what a real machine offers, and low enough that nothing gpujobqueue
builds for it (a worker name per GPU, a device list, a job per array element) can exhaust the host that renders
the script. A value past a bound is refused, naming its keyword, before anything is allocated for it.
"""

from __future__ import annotations

MAX_NODES = 16_384  # nodes per job; Aurora's prod queue takes up to 10,624 (ALCF), Frontier's 9,472
MAX_GPUS_PER_NODE = 64  # GPUs per node; today's densest nodes have 8 to 16
MAX_CPUS_PER_NODE = 4096  # cores (or hardware threads) per node
MAX_THREADS_PER_WORKER = 4096
MAX_MEMORY_BYTES = 2**46  # 64 TiB: host memory per node, or device memory per GPU
MAX_WALLTIME_SECONDS = 365 * 86400  # a year; batch systems refuse or mangle longer ones
MAX_WAIT_SECONDS = 7 * 86400  # death_timeout, workers' start timeout: a week
MAX_JOBS_PER_CLUSTER = 10_000  # jobs one scale() may ask for
# One keyword's value, or one dask config value a cluster reads, checked before any parser reads it
# (validation.check_bounded): nothing a keyword means comes near these.
MAX_LIST_ITEMS = 1000  # lines of a prologue or of extra directives, worker arguments' words, variables
MAX_VALUE_ITEMS = 10_000  # items of the lists and mappings in one value, nested ones included
MAX_VALUE_DEPTH = 16  # lists and mappings nested; the deepest a keyword takes (cpu_pool's directives) is 2
MAX_VALUE_CHARACTERS = 256 << 10  # text of one value, its strings together: 1000 lines of 256 characters
MAX_NUMBER_DIGITS = 40  # digits of a whole number; Python cannot write one of more than 4300 as text
# Paths: Linux's PATH_MAX and NAME_MAX; a longer one cannot be opened (ENAMETOOLONG).
MAX_PATH_CHARACTERS = 4096
MAX_PATH_PART_CHARACTERS = 255

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
# The largest shipped site file (aurora) is 9.8 KB, the most values one holds (delta) 377: each
# bound is over 25 times that. YAML is parsed in Python, and values are what cost: 131,000 one-letter
# values in 255 KiB took 7.6 s and 163 MiB to load. So bytes and values are both bounded, the values
# counted as the file is parsed (10,000 take 0.2 s and 6 MiB).
MAX_SITE_FILE_BYTES = 256 << 10  # 256 KiB
MAX_SITE_VALUES = 10_000  # keys, items and scalars (YAML nodes) in one file
MAX_SITE_DEPTH = 16  # nested mappings and lists
MAX_SITE_NUMBER_CHARS = 20  # characters of a whole number; the largest a site states, a memory size in bytes, has 14
MAX_SITE_ITEMS = 100  # keys of one mapping or items of one list (queues, hostnames, bins); the most shipped is 23
MAX_SITE_FILES = 500  # site files in one folder of the site path; the package ships 46
MAX_SUBMIT_TEST_JOBS = 64  # jobs `check --submit-test` shows the batch system, each a command; delta has 11
# A batch system's listing of its queues (sinfo, qstat -Qf, bqueues -l, qconf -sq) that `check --submit-test` reads:
# some 2 KB a queue (Grid Engine's qconf -sq, the longest), so 8 MiB holds thousands.
MAX_QUEUE_LISTING_BYTES = 8 << 20
MAX_LISTED_QUEUES = 10_000
MAX_PATTERN_INPUT = 128  # characters of an account or host name matched against a site pattern
# The ways a site pattern can try to match (sites/patterns.py): those of three unbounded repeats on 128 characters.
MAX_PATTERN_CHOICES = (MAX_PATTERN_INPUT + 1) ** 3

# Usage reports (gpujobqueue/jobs/usage.py): a cluster's jobs over its life, replacements included.
MAX_USAGE_JOBS = 100_000  # job records one report keeps
# A job's record as a report writes it is about 400 bytes (38 MB measured for 100,000 jobs with
# 45-character names and ids): a report of MAX_USAGE_JOBS jobs fits, with room for longer names.
MAX_USAGE_FILE_BYTES = 64 << 20  # 64 MiB
# JSON values (objects, arrays, keys, numbers, strings) in a report, counted before it is parsed by
# the characters that open or separate them ([ { , :). A job's record has 11 members, 23 of those
# characters, so a report of MAX_USAGE_JOBS jobs passes with room for some in names; a file of tiny
# values ([{},{},...]), which json would build at some 70 bytes each (a 60 MiB one took 1.6 GB),
# is refused, and one that passes takes no more memory than the largest real report (197 MB
# against 236 MB measured for gpujobqueue usage).
MAX_USAGE_JSON_VALUES = 32 * MAX_USAGE_JOBS

# The scheduler file the cluster waits for: distributed writes its identity there at start (275 bytes measured).
MAX_SCHEDULER_FILE_BYTES = 1 << 20  # 1 MiB
