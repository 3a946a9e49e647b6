"""Ships templates/ and site-configs/ inside the installed package, as gpujobqueue/templates
and gpujobqueue/site_configs, so that a plain ``pip install .`` can render scripts."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_DIRS = {"templates": "templates", "site-configs": "site_configs"}


class BuildWithData(build_py):
    def run(self):
        super().run()
        here = Path(__file__).parent
        for source, target in DATA_DIRS.items():
            for path in sorted((here / source).rglob("*")):
                if path.is_file() and not path.name.startswith("."):
                    destination = Path(self.build_lib, "gpujobqueue", target, path.relative_to(here / source))
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    self.copy_file(str(path), str(destination))


setup(cmdclass={"build_py": BuildWithData})
