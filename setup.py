"""Package discovery, the one build setting pyproject.toml cannot express.

Every package under ``lipgan/`` is found automatically (a hand-written list once left
``lipgan.study`` out of the wheel, and editable installs hid it). The built-in plugins live in
``plugins/`` but install as ``lipgan_plugins`` (``[tool.setuptools.package-dir]`` in
pyproject.toml), a rename that ``[tool.setuptools.packages.find]`` cannot discover, so their
packages are found under ``plugins/`` and renamed here. Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

PLUGINS = "lipgan_plugins"

setup(
    packages=find_packages(include=["lipgan", "lipgan.*"])
    + [PLUGINS]
    + [f"{PLUGINS}.{name}" for name in find_packages("plugins")]
)
