"""Issue 19: TLS and private files live in one module, gpujobqueue/security/tls.py, and it does what the
old four places did: credential files 0600, never through a planted link, no folder made for nothing."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from distributed.security import Security

from gpujobqueue.security.tls import replace_private_file, worker_security_with_files, write_private_file

ROOT = Path(__file__).resolve().parents[2]
# What only security.py may do: read a Security's TLS files, make credentials, write or make private files and folders.
SECURITY_WORK = re.compile(r"get_tls_config_for_role|Security\.temporary|0o600|0o700|O_NOFOLLOW|O_EXCL|mkdtemp")
ALLOWED: dict[tuple[str, str], str] = {}  # (file, what) -> why it may


def security_work_outside_security() -> list[tuple[str, int, str]]:
    """(file, line, what) for each piece of security work in a module other than gpujobqueue/security/tls.py."""
    found = []
    for path in sorted((ROOT / "gpujobqueue").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative == "gpujobqueue/security/tls.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in SECURITY_WORK.finditer(line):
                if (relative, match.group()) not in ALLOWED:
                    found.append((relative, number, match.group()))
    return found


def test_tls_and_private_files_are_handled_in_security_py_alone():
    assert security_work_outside_security() == []
    assert len((ROOT / "gpujobqueue" / "security" / "tls.py").read_text().splitlines()) <= 450


def test_the_old_tls_modules_are_gone():
    for name in ("tls.py", "script_tls.py", "private_folders.py"):
        assert not (ROOT / "gpujobqueue" / name).exists(), name


def test_worker_credentials_in_memory_go_to_0600_files_and_files_make_no_folder(tmp_path):
    made = []

    def folder() -> str:
        made.append(1)
        return str(tmp_path)

    security = Security.temporary()
    with_files = worker_security_with_files(security, folder)
    config = with_files.get_tls_config_for_role("worker")
    paths = [config[key] for key in ("ca_file", "cert", "key")]
    assert all(os.path.dirname(path) == str(tmp_path) for path in paths), paths
    assert {stat.S_IMODE(os.stat(path).st_mode) for path in paths} == {0o600}
    assert Path(config["key"]).read_text() == security.get_tls_config_for_role("worker")["key"]
    assert "\n" in security.tls_worker_key, "the caller's Security is left as it was"
    made.clear()
    assert worker_security_with_files(with_files, folder) is with_files
    assert made == [], "credentials already in files need no private folder"
    assert worker_security_with_files(None, folder) is None


def test_private_files_are_never_written_through_a_planted_link(tmp_path):
    target = tmp_path / "victim"
    target.write_text("kept")
    (tmp_path / "key.pem").symlink_to(target)
    with pytest.raises(FileExistsError):
        write_private_file(str(tmp_path), "key.pem", "secret")
    with pytest.raises(OSError):
        replace_private_file(str(tmp_path / "key.pem"), "secret")
    assert target.read_text() == "kept"
    (tmp_path / "copy.sh").write_text("old")
    os.chmod(tmp_path / "copy.sh", 0o644)
    replace_private_file(str(tmp_path / "copy.sh"), "new")
    assert (tmp_path / "copy.sh").read_text() == "new"
    assert stat.S_IMODE((tmp_path / "copy.sh").stat().st_mode) == 0o600
