"""Every registered constraint as a Python class: ``from lipgan.constraints import GradientPenalty``.

Built-ins: ``NoConstraint``, ``WeightClip``, ``GradientPenalty``, ``SpectralNorm``,
``LipschitzPenalty``, ``Dragan``, ``R1``, ``Bjorck``, ``AOL``, ``AOC``, ``Cayley``, ``SOC``, ``SLL``, ``CPL``;
third-party plugins' classes are found the same way
(see :mod:`lipgan.core.public_names`). In gin and on the CLI the same classes go by their registered
names (``@gradient_penalty()``).
"""

from lipgan.core import public_names


def __getattr__(name: str) -> type:
    return public_names.lookup("constraint", __name__, name)


def __dir__() -> list[str]:
    return public_names.names("constraint")
