"""A plain (non-editable) ``pip install .`` carries the templates and renders scripts."""

import subprocess
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(600)
def test_installed_package_renders_from_its_own_templates(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--no-deps", str(REPO)], check=True, cwd=tmp_path, timeout=500
    )
    where = subprocess.run(
        [
            python,
            "-c",
            "import gpujobqueue, gpujobqueue.render as r; print(gpujobqueue.__file__); "
            "print(r.package_data_dir('templates')); print(r.package_data_dir('site-configs'))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.split()
    assert all(str(env_dir) in line for line in where), f"not loaded from the installed package: {where}"
    script = subprocess.run(
        [env_dir / "bin" / "gpujobqueue", "render", "slurm", "--gpus-per-node", "2", "--cores", "2", "--memory", "8GB"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
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
