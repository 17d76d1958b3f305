"""Every registered strategy as a Python class: ``from lipgan.strategies import Mirrored``.

Built-ins: ``Default``, ``Mirrored``, ``TPU``, ``MultiWorker``; third-party plugins' classes are
found the same way (see :mod:`lipgan.core.public_names`). In gin and on the CLI they go by their
registered names (``@mirrored()``).
"""

from lipgan.core import public_names


def __getattr__(name: str) -> type:
    return public_names.lookup("strategy", __name__, name)


def __dir__() -> list[str]:
    return public_names.names("strategy")
