"""Grid Engine's own launcher on the real Grid Engine: ``qrsh -inherit`` starts a task of the job."""

from __future__ import annotations

import time

import pytest
from fixtures.sge import _format_conf

from gpujobqueue.jobs.launchers import LAUNCHER_OBJECTS, LaunchContext

pytestmark = pytest.mark.sge
TIGHT_PE, TIGHT_QUEUE = "gjqtight", "tight.q"


def _tight_queue(sge):
    """A parallel environment whose tasks qrsh -inherit may start, and a queue of it without the session's
    GPU starter method (which execs its arguments, while Grid Engine hands a qrsh task its command line as
    one string for the shell): both are removed after the test, so no other job can land there."""
    sge.run(
        "qconf",
        "-Ap",
        sge._write_conf(
            f"pe-{TIGHT_PE}",
            _format_conf(
                {
                    "pe_name": TIGHT_PE,
                    "slots": "999",
                    "user_lists": "NONE",
                    "xuser_lists": "NONE",
                    "start_proc_args": "NONE",
                    "stop_proc_args": "NONE",
                    "allocation_rule": "$pe_slots",
                    "control_slaves": "TRUE",
                    "job_is_first_task": "FALSE",
                    "urgency_slots": "min",
                    "accounting_summary": "FALSE",
                    "qsort_args": "NONE",
                }
            ),
        ),
    )
    text = sge.run("qconf", "-sq", "gpu.q").stdout.replace("\\\n", " ")  # continued lines joined
    fields = dict(line.split(None, 1) for line in text.splitlines() if line.strip())
    fields.update(qname=TIGHT_QUEUE, seq_no="99", starter_method="NONE", epilog="NONE", prolog="NONE", pe_list=TIGHT_PE)
    sge.run("qconf", "-Aq", sge._write_conf(TIGHT_QUEUE, _format_conf(fields)))


def test_qrsh_inherit_starts_the_node_file_on_the_jobs_host_with_its_rank(sge, tmp_path):
    _tight_queue(sge)
    try:
        # One host: the job's one host gets the one task (a job of N hosts loops over N). The node file sets
        # the variables, as the job script writes it; qrsh -inherit passes the rank alone.
        context = LaunchContext(nodes=1, cpus_per_node=2, gpus_per_node=1)
        node_file = tmp_path / "node.sh"
        node_file.write_text(
            "export PROBE=\"a b 'c' \\$x\"\n"
            'echo "$GPUJOBQUEUE_NODE_RANK|$PROBE|$JOB_ID|${SECRET-unset}"'
            f' > "{tmp_path}/rank-$GPUJOBQUEUE_NODE_RANK"\n'
        )
        script = tmp_path / "job.sh"
        script.write_text(
            "\n".join(
                [
                    "#!/bin/bash",
                    "export SECRET='not passed'",
                    f"node_task=(bash {node_file})",
                    *LAUNCHER_OBJECTS["qrsh-inherit"].start_lines(context),
                    'for pid in "${worker_pids[@]}"; do wait "$pid" || exit 3; done',
                    "",
                ]
            )
        )
        job_id = sge.qsub(
            "-q",
            TIGHT_QUEUE,
            "-pe",
            TIGHT_PE,
            "2",
            "-o",
            str(tmp_path / "out"),
            "-e",
            str(tmp_path / "err"),
            str(script),
        )
        deadline = time.monotonic() + 30
        while job_id in sge.job_ids() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert job_id not in sge.job_ids(), f"the job did not end: {sge.job_states()}"
        err = (tmp_path / "err").read_text() if (tmp_path / "err").exists() else ""
        assert (tmp_path / "rank-0").exists(), f"no task ran: {err}"
        assert (tmp_path / "rank-0").read_text() == f"0|a b 'c' $x|{job_id}|unset\n", err
    finally:
        sge.run("qdel", "-f", *sge.job_ids(), check=False) if sge.job_ids() else None
        sge.run("qconf", "-dq", TIGHT_QUEUE, check=False)
        sge.run("qconf", "-dp", TIGHT_PE, check=False)
