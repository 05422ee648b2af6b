"""Everything about the package is in pyproject.toml; this file only adds one file to the
wheel that setuptools' declarative configuration cannot place: ``passlab-autorecord.pth``
at the root of site-packages, whose one line starts passlab's recorder when (and only
when) ``PASSLAB_TRACE`` is set, so that ``PASSLAB_TRACE=out/ python my_script.py`` records
an unmodified program (setuptools ships its own ``distutils-precedence.pth`` the same
way). See passlab/autorecord/__init__.py."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = Path("passlab") / "autorecord" / "passlab-autorecord.pth"


class BuildPyWithPth(build_py):
    def run(self) -> None:
        super().run()
        self.copy_file(str(PTH), str(Path(self.build_lib) / PTH.name), preserve_mode=False)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / PTH.name)]


setup(cmdclass={"build_py": BuildPyWithPth})
