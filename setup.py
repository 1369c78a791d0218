"""The build step pyproject.toml cannot express: ship the top-level Dockerfile and sandbox_repos/
inside the package (as repair_agent/_data/), so that an installed wheel finds them with
repair_agent.resources.data_path exactly as a source checkout does. Everything else about the
project is declared in pyproject.toml."""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = ("Dockerfile", "sandbox_repos")  # repair_agent.resources.SHIPPED (not importable before the build)
CACHES = ("__pycache__", ".pytest_cache", "*.pyc", "*.pyo", ".git")


class build_py_with_data(build_py):
    def run(self):
        super().run()
        # An editable install reads them in place from the checkout; nothing to copy.
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "repair_agent" / "_data"
        shutil.rmtree(target, ignore_errors=True)  # a reused build/ must not keep deleted files
        target.mkdir(parents=True)
        for name in SHIPPED:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, target / name, ignore=shutil.ignore_patterns(*CACHES))
            else:
                shutil.copyfile(source, target / name)


setup(cmdclass={"build_py": build_py_with_data})
