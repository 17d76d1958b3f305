"""The ranges a constraint's hyper-parameters are searched over: the types of ``Constraint.search_space``.

A constraint that can be tuned (``lipgan tune``) says so itself, with a class attribute::

    from lipgan.core.search_space import ADAM, PENALTY_WEIGHT

    class GradientPenalty(Constraint):
        name = "gradient_penalty"
        search_space = {**ADAM, "weight": PENALTY_WEIGHT}

Each entry maps a parameter to a range with ``draw(rng)`` and ``describe()``. The shared optimizer
parameters (``learning_rate``, ``beta_1``, ``beta_2``, ``n_critic``: :data:`ADAM`, or
:data:`RMSPROP` for a constraint trained with RMSProp) are bound to both players' optimizers by the
tuner (:func:`lipgan.study.search.bindings`); every other key is a constructor argument of the
constraint, bound as ``<name>.<key>``. ``search_fixed`` holds gin bindings every config of the
constraint gets unchanged.

The shared ranges are compare_gan's wide ones (Lucic et al. 2018, "Are GANs Created Equal?",
NeurIPS; google/compare_gan v1, ``compare_gan/src/params.py``, ``GetDefaultWideRange``):
learning rate log-uniform on [1e-5, 1e-2], Adam β₁ uniform on [0, 1], critic updates per
generator update 1 or 5, plus Adam β₂ ∈ {0.9, 0.999} (WGAN-GP's and Adam's default, which SNGAN,
Miyato et al. 2018, Table 1, found to matter). Penalty weights: log-uniform on [0.1, 100]
(compare_gan ``lambda``: 10^[−1, 2]). Pure Python: no TensorFlow here.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Protocol

import numpy as np


class Range(Protocol):
    """What a search-space entry provides."""

    def draw(self, rng: np.random.Generator): ...

    def describe(self) -> str: ...


@dataclasses.dataclass(frozen=True)
class LogUniform:
    low: float
    high: float

    def draw(self, rng: np.random.Generator) -> float:
        return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))

    def describe(self) -> str:
        return f"log-uniform [{self.low:g}, {self.high:g}]"


@dataclasses.dataclass(frozen=True)
class Uniform:
    low: float
    high: float

    def draw(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(self.low, self.high))

    def describe(self) -> str:
        return f"uniform [{self.low:g}, {self.high:g}]"


@dataclasses.dataclass(frozen=True)
class Choice:
    values: tuple

    def draw(self, rng: np.random.Generator):
        return self.values[int(rng.integers(len(self.values)))]

    def describe(self) -> str:
        return "one of {" + ", ".join(f"{v:g}" for v in self.values) + "}"


#: compare_gan's wide ranges, shared by every Adam-trained constraint.
ADAM = {
    "learning_rate": LogUniform(1e-5, 1e-2),
    "beta_1": Uniform(0.0, 1.0),
    "beta_2": Choice((0.9, 0.999)),
    "n_critic": Choice((1, 5)),
}
#: For a constraint trained with RMSProp (weight clipping, as the WGAN paper): no β.
RMSPROP = {"learning_rate": LogUniform(1e-5, 1e-2), "n_critic": Choice((1, 5))}
#: The optimizer parameters the tuner binds itself; every other key is the constraint's own.
OPTIMIZER_KEYS = frozenset(ADAM) | frozenset(RMSPROP)
#: Penalty weights (λ, γ): compare_gan's ``lambda`` range.
PENALTY_WEIGHT = LogUniform(0.1, 100.0)


def check_space(name: str, space) -> None:
    """Raise ValueError (one line) unless ``space`` is a usable search space for ``name``."""
    if not isinstance(space, dict) or not space:
        raise ValueError(f"{name}.search_space must be a non-empty dict of parameter -> range")
    for key, value in space.items():
        if not (
            callable(getattr(value, "draw", None)) and callable(getattr(value, "describe", None))
        ):
            raise ValueError(
                f"{name}.search_space[{key!r}] is {value!r}; use a lipgan.core.search_space range "
                "(LogUniform, Uniform, Choice) or an object with draw(rng) and describe()"
            )
    if "learning_rate" not in space or "n_critic" not in space:
        raise ValueError(
            f"{name}.search_space must include the optimizer's ranges: "
            "{**lipgan.core.search_space.ADAM, ...} (or RMSPROP)"
        )
