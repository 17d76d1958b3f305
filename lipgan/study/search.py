"""What a tuned study searches: one table of hyper-parameter ranges per constraint, and the draw.

The protocol is Lucic et al. 2018, "Are GANs Created Equal?" (NeurIPS; google/compare_gan v1,
``compare_gan/src/params.py``, ``GetDefaultWideRange`` and the per-GAN ranges): for every method
the same number of configurations is drawn at random from its ranges, each trained once, and the
best is then re-run over seeds. The shared ranges are compare_gan's wide ones:

* learning rate (both players): log-uniform on [1e-5, 1e-2];
* Adam β₁: uniform on [0, 1];
* critic updates per generator update: 1 or 5;

plus Adam β₂ ∈ {0.9, 0.999}, WGAN-GP's (Gulrajani et al. 2017) and Adam's default, which SNGAN
(Miyato et al. 2018, Table 1) found to matter for spectral norm. Each constraint adds its own
parameter, with the range its paper used or compare_gan's for the same kind of weight:

* penalty weights (gradient penalty λ, Lipschitz penalty λ, DRAGAN λ, R1 γ): log-uniform on
  [0.1, 100] (compare_gan ``lambda``: 10^[−1, 2]);
* weight clipping's c: log-uniform on [0.001, 1] (compare_gan ``weight_clipping``: 10^[−3, 0]);
  with RMSProp, as in the WGAN paper (Arjovsky et al. 2017, Algorithm 1), so no β;
* DRAGAN's perturbation is the official code's, 0.5 times the data's standard deviation
  (``dragan.noise = 'reference'``), not an absolute 0.5 in data units;
* spectral norm (one power iteration, Miyato et al. 2018), Björck and AOL (with MaxMin, as their
  papers train them) have no parameter of their own.

A draw is a pure function of (constraint name, config index): config 7 of ``gradient_penalty`` is
the same on every machine, for every data set and whatever the number of configs asked, so adding
configs to a search reuses the trials already run. Pure Python: no TensorFlow here.
"""

from __future__ import annotations

import dataclasses
import math
import zlib

import numpy as np

from lipgan.errors import ConfigError


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


#: compare_gan's wide ranges (see the module docstring), shared by every Adam-trained constraint.
ADAM = {
    "learning_rate": LogUniform(1e-5, 1e-2),
    "beta_1": Uniform(0.0, 1.0),
    "beta_2": Choice((0.9, 0.999)),
    "n_critic": Choice((1, 5)),
}
#: Weight clipping trains with RMSProp (no β).
RMSPROP = {"learning_rate": LogUniform(1e-5, 1e-2), "n_critic": Choice((1, 5))}
PENALTY_WEIGHT = LogUniform(0.1, 100.0)

#: The one table: constraint name -> {parameter: range}. A constraint parameter is bound as
#: ``<constraint>.<parameter>``; the shared ones are translated by :func:`bindings`.
SPACES: dict[str, dict] = {
    "gradient_penalty": {**ADAM, "weight": PENALTY_WEIGHT},
    "lipschitz_penalty": {**ADAM, "weight": PENALTY_WEIGHT},
    "dragan": {**ADAM, "weight": PENALTY_WEIGHT},
    "r1": {**ADAM, "gamma": PENALTY_WEIGHT},
    "weight_clip": {**RMSPROP, "c": LogUniform(1e-3, 1.0)},
    "spectral_norm": dict(ADAM),
    "bjorck": dict(ADAM),
    "aol": dict(ADAM),
    "sll": dict(ADAM),
    "cpl": dict(ADAM),
}

#: Settings every config of a constraint gets unchanged (see the module docstring).
FIXED: dict[str, tuple[str, ...]] = {
    "dragan": ("dragan.noise = 'reference'", "dragan.noise_scale = 0.5"),
}

#: Where the drawn configs come from; a different value is a different search.
SEARCH_SEED = 0x7E57


def space(constraint: str) -> dict:
    """The ranges of ``constraint`` (its name, without a SPEC's ``:key=value``)."""
    if constraint not in SPACES:
        raise ConfigError(
            f"no search space for constraint {constraint!r}; tunable: {', '.join(SPACES)} "
            "(add a row to lipgan.study.search.SPACES)"
        )
    return SPACES[constraint]


def draw(constraint: str, index: int) -> dict:
    """Config ``index`` of ``constraint``: ``{parameter: value}`` (see the module docstring)."""
    rng = np.random.default_rng([SEARCH_SEED, zlib.crc32(constraint.encode()), int(index)])
    return {name: r.draw(rng) for name, r in space(constraint).items()}


def bindings(constraint: str, config: dict, steps: int) -> tuple[str, ...]:
    """The gin bindings of ``config`` for a run of ``steps`` iterations on a shipped toy config
    (the ring and grid configs' Adam with linear decay to 0; weight clipping's RMSProp).

    The critic's decay counts optimizer steps, ``n_critic`` per iteration, so it is bound to
    ``n_critic × steps`` for the rate to reach 0 on the last iteration whatever ``n_critic``.
    """
    n_critic = int(config["n_critic"])
    lr = float(config["learning_rate"])
    out = [f"train.n_critic = {n_critic}"]
    if "beta_1" in config:
        out += [
            f"critic/linear_decay.initial_learning_rate = {lr!r}",
            f"generator/linear_decay.initial_learning_rate = {lr!r}",
            f"critic/linear_decay.decay_steps = {n_critic * steps}",
            f"generator/linear_decay.decay_steps = {steps}",
        ]
        for player in ("critic", "generator"):
            out += [
                f"{player}/Adam.beta_1 = {float(config['beta_1'])!r}",
                f"{player}/Adam.beta_2 = {float(config['beta_2'])!r}",
            ]
    else:  # RMSProp at a constant rate, as the WGAN paper
        out += [
            f"critic/RMSprop.learning_rate = {lr!r}",
            f"generator/RMSprop.learning_rate = {lr!r}",
        ]
    shared = set(ADAM) | set(RMSPROP)
    out += [f"{constraint}.{k} = {float(v)!r}" for k, v in config.items() if k not in shared]
    return (*FIXED.get(constraint, ()), *out)


def describe(config: dict) -> str:
    """``lr 0.00146, β₁ 0.244, β₂ 0.999, n_critic 5, weight 2.15``: a config on one line (three
    significant digits, so that β₂ 0.999 is not shown as 1)."""
    names = {"learning_rate": "lr", "beta_1": "β₁", "beta_2": "β₂"}
    parts = []
    for key, value in config.items():
        text = f"{value:.3g}" if isinstance(value, float) else str(value)
        parts.append(f"{names.get(key, key)} {text}")
    return ", ".join(parts)
