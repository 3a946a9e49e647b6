"""A plain (non-editable) ``pip install .`` carries the templates and renders scripts."""

import site
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _venv_beside_this_one(env_dir: Path) -> Path:
    """A new venv that sees the dependencies of the one running the tests, after its own packages,
    but not this checkout's editable gpujobqueue (whose finder a .pth of that venv installs: a plain
    path line in a .pth adds the folder without running the .pth files in it). The system python's
    packages are not seen: a fresh machine has none."""
    venv.create(env_dir, with_pip=True)
    own = Path(sysconfig.get_path("purelib", vars={"base": str(env_dir), "platbase": str(env_dir)}))
    (own / "tests-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return env_dir / "bin" / "python"


def _run(command: list, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, **kwargs)
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.long
@pytest.mark.timeout(600)
def test_installed_package_renders_from_its_own_templates(tmp_path):
    env_dir = tmp_path / "venv"
    python = _venv_beside_this_one(env_dir)
    assert sys.prefix != sys.base_prefix, "run the tests in a venv (.ci/test makes .venv)"
    _run([python, "-m", "pip", "install", "--quiet", "--no-deps", str(REPO)], tmp_path, timeout=500)
    where = _run(
        [
            python,
            "-c",
            "import gpujobqueue, gpujobqueue.machine.package_data as r; print(gpujobqueue.__file__); "
            "print(r.package_data_dir('templates')); print(r.package_data_dir('site-configs'))",
        ],
        tmp_path,
    ).stdout.split()
    assert all(str(env_dir) in line for line in where), f"not loaded from the installed package: {where}"
    script = _run(
        [env_dir / "bin" / "gpujobqueue", "render", "slurm", "--gpus-per-node", "2", "--cores", "2", "--memory", "8GB"],
        tmp_path,
    ).stdout
    assert "#SBATCH --gpus-per-node=2" in script and "-m dask_cuda.cli " in script
    # The site schema ships too: the installed command checks a site file.
    checked = subprocess.run(
        [env_dir / "bin" / "gpujobqueue", "check", str(REPO / "tests" / "sites" / "good" / "minimal.yaml")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert checked.returncode == 0 and "ok:" in checked.stdout, checked.stderr
    # dask's own command finds the plugin of the installed package (the dask_cli entry point).
    listed = subprocess.run(
        [python, "-m", "dask", "gpujobqueue", "sites"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("SITE") and "perlmutter" in listed.stdout and "slurm" in listed.stdout
