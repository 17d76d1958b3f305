"""What every registered plugin class has, constraint or strategy: a name, a description, a repr."""

from __future__ import annotations

import inspect
import re
from typing import Any, ClassVar


class Named:
    """Base of :class:`lipgan.Constraint` and :class:`lipgan.StrategyPlugin`.

    ``name`` (snake_case, unique per kind) is the class's name in gin and on the CLI;
    ``description`` is the line ``lipgan plugins`` shows (the docstring's first line if empty).
    Constructor keyword arguments are stored as public attributes of the same name, by convention:
    the repr shows them. A run dir's settings record (:meth:`lipgan.Trainer.settings`) compares
    the public attributes and the constructor's arguments themselves (:attr:`arguments`, recorded
    here whatever ``__init__`` does with them), so a parameter kept in a private attribute cannot
    change on resume unnoticed.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: ``{argument: value}``: what each argument that a plugin gained later meant before it existed
    #: (SOC's ``bound`` was ``'holder'``). A run dir's record holds every argument with its
    #: default, except those its lipgan did not have yet: rebuilding or resuming such a run reads
    #: the absent argument as this value, never as today's default, so an old run's critic stays
    #: the function it trained (:func:`lipgan.run.spec.unrecorded_settings`). Add an entry
    #: whenever you add an argument whose default changes what a step computes.
    unrecorded_defaults: ClassVar[dict[str, Any]] = {}

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        self._lipgan_arguments = _bound_arguments(cls, args, kwargs)
        return self

    @property
    def arguments(self) -> dict[str, Any] | None:
        """The arguments this instance was constructed with, defaults included (the binding).

        ``None`` when they are unknown (an instance made without calling the class, e.g. a copy).
        """
        return self.__dict__.get("_lipgan_arguments")

    def __repr__(self) -> str:
        params = {k: v for k, v in vars(self).items() if not k.startswith("_")}
        args = ", ".join(f"{k}={v!r}" for k, v in params.items())
        return f"{type(self).__name__}({args})"


def _bound_arguments(cls, args, kwargs) -> dict[str, Any] | None:
    init = cls.__init__
    if init is object.__init__:
        return {}
    try:
        bound = inspect.signature(init).bind(None, *args, **kwargs)
    except (TypeError, ValueError):
        return None  # __init__ itself reports the wrong call
    bound.apply_defaults()
    out = {}
    for position, (key, value) in enumerate(bound.arguments.items()):
        if position == 0:
            continue  # self
        kind = bound.signature.parameters[key].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            out.update({k: _stable(v) for k, v in value.items()})
        else:
            out[key] = _stable(value)
    return out


def is_scalar(value) -> bool:
    """A JSON scalar that gin writes as a literal: ``None``, a bool, a number or a string."""
    return value is None or isinstance(value, (bool, int, float, str))


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _stable(value):
    """A value as the settings record keeps it: plain data as is, objects by repr without address."""
    if is_scalar(value):
        return value
    if isinstance(value, (list, tuple)):
        return [_stable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _stable(v) for k, v in value.items()}
    return _ADDRESS.sub("", repr(value))
