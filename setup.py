"""The build hook that makes an installed harness work away from any checkout:
challenges/, reference/ and solutions/ are copied into the package as
harness/_data when a wheel is built, so git keeps one copy of each. An
editable install (`pip install -e`, `make install`) copies nothing and reads
the checkout. Everything else about the package is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_TREES = ("challenges", "reference", "solutions")


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        source = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "harness" / "_data"
        shutil.rmtree(target, ignore_errors=True)  # a challenge removed since the last build goes too
        for tree in DATA_TREES:
            shutil.copytree(source / tree, target / tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildPyWithData})
