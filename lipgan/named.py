"""What every registered plugin class has, constraint or strategy: a name, a description, a repr."""

from __future__ import annotations

from typing import ClassVar


class Named:
    """Base of :class:`lipgan.Constraint` and :class:`lipgan.StrategyPlugin`.

    ``name`` (snake_case, unique per kind) is the class's name in gin and on the CLI;
    ``description`` is the line ``lipgan plugins`` shows (the docstring's first line if empty).
    Constructor keyword arguments are stored as public attributes of the same name, by convention:
    the repr shows them, and a run dir's settings record (:meth:`lipgan.Trainer.settings`) compares
    them when a run is resumed.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def __repr__(self) -> str:
        params = {k: v for k, v in vars(self).items() if not k.startswith("_")}
        args = ", ".join(f"{k}={v!r}" for k, v in params.items())
        return f"{type(self).__name__}({args})"
