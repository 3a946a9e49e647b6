"""The login node reads the job scheduler's address from the cluster's folder only through the folder it made
(issue 40 point 2): a folder swapped at its name, even this user's own, is refused naming it, and nothing in it is
read."""

import json
import os
import tempfile

import pytest

from gpujobqueue.errors import GPUJobQueueError
from gpujobqueue.jobs.scheduler_job import SCHEDULER_FILE_NAME, read_scheduler_address
from gpujobqueue.security.owned_folders import ClusterFolder
from gpujobqueue.security.tls import make_private_directory


def made_folder(tmp_path) -> ClusterFolder:
    folder = ClusterFolder(*make_private_directory(str(tmp_path), ".gpujobqueue-test-"))
    with open(os.path.join(folder.path, SCHEDULER_FILE_NAME), "w") as f:
        json.dump({"address": "tls://10.0.0.1:8786"}, f)
    return folder


def test_the_address_is_read_from_the_folder_the_cluster_made(tmp_path):
    folder = made_folder(tmp_path)
    assert read_scheduler_address(SCHEDULER_FILE_NAME, folder) == "tls://10.0.0.1:8786"


@pytest.mark.parametrize("owner", [os.getuid(), 65534])
def test_a_folder_swapped_at_its_name_is_refused_and_not_read(tmp_path, owner):
    folder = made_folder(tmp_path)
    os.rename(folder.path, folder.path + ".renamed")
    os.mkdir(folder.path, 0o700)
    with open(os.path.join(folder.path, SCHEDULER_FILE_NAME), "w") as f:
        json.dump({"address": "tcp://192.0.2.66:8786"}, f)  # the attacker's scheduler
    os.chown(folder.path, owner, owner)
    with pytest.raises(GPUJobQueueError, match="is not the private folder the cluster made") as refused:
        read_scheduler_address(SCHEDULER_FILE_NAME, folder)
    assert folder.path in str(refused.value)


def test_a_link_or_a_fifo_at_the_folders_name_is_refused_without_waiting(tmp_path):
    folder = made_folder(tmp_path)
    os.rename(folder.path, folder.path + ".renamed")
    os.mkfifo(folder.path)
    with pytest.raises(GPUJobQueueError, match="is not the private folder the cluster made"):
        read_scheduler_address(SCHEDULER_FILE_NAME, folder)
    os.unlink(folder.path)
    os.symlink(tempfile.mkdtemp(dir=tmp_path), folder.path)
    with pytest.raises(GPUJobQueueError, match="is not the private folder the cluster made"):
        read_scheduler_address(SCHEDULER_FILE_NAME, folder)
