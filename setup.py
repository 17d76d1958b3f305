"""Package discovery and the editable install, the build settings pyproject.toml cannot express.

Every package under ``lipgan/`` is found automatically (a hand-written list once left
``lipgan.study`` out of the wheel, and editable installs hid it). The built-in plugins live in
``plugins/`` but install as ``lipgan_plugins`` (``[tool.setuptools.package-dir]`` in
pyproject.toml), a rename that ``[tool.setuptools.packages.find]`` cannot discover, so their
packages are found under ``plugins/`` and renamed here. Everything else is in pyproject.toml.

``pip install -e .``: because of that rename, setuptools installs a meta path finder
(``__editable___lipgan_*_finder.py``), which Python consults only after its own path finder. Run
from the folder that holds a clone named ``lipgan``, the path finder finds that clone first, a
folder without ``__init__.py``: a namespace-package candidate, which wins when no path entry holds
a regular ``lipgan`` package; ``lipgan.core.plugins`` then is the clone's ``plugins/`` folder
("cannot import name 'load_registry'"). :class:`EditableWheel` adds the project root as a path
entry (one more ``.pth``, as setuptools' ``compat`` mode does): the path finder then finds the
regular package ``lipgan/`` there, and a regular package beats namespace candidates wherever they
are on ``sys.path`` (PEP 420). The finder still provides ``lipgan_plugins``.
"""

from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.editable_wheel import editable_wheel

PLUGINS = "lipgan_plugins"


class EditableWheel(editable_wheel):
    """setuptools' editable install, plus a ``.pth`` that puts the project root on ``sys.path``."""

    def _select_strategy(self, name, *args, **kwargs):
        return _WithProjectRoot(
            super()._select_strategy(name, *args, **kwargs), name, Path(self.project_dir)
        )


class _WithProjectRoot:
    """An editable strategy (``__call__(wheel, files, mapping)``, a context manager) that writes
    ``__editable__.<name>.root.pth`` besides what ``strategy`` writes."""

    def __init__(self, strategy, name: str, root: Path):
        self.strategy, self.name, self.root = strategy, name, root.resolve()

    def __call__(self, wheel, files, mapping):
        self.strategy(wheel, files, mapping)
        wheel.writestr(f"__editable__.{self.name}.root.pth", f"{self.root}\n".encode())

    def __enter__(self):
        self.strategy.__enter__()
        return self

    def __exit__(self, *exc):
        return self.strategy.__exit__(*exc)


setup(
    packages=find_packages(include=["lipgan", "lipgan.*"])
    + [PLUGINS]
    + [f"{PLUGINS}.{name}" for name in find_packages("plugins")],
    cmdclass={"editable_wheel": EditableWheel}
    if hasattr(editable_wheel, "_select_strategy")
    else {},
)
