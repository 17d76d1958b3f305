"""What a tuned study searches: each constraint's own ranges, and the draw.

The protocol is Lucic et al. 2018, "Are GANs Created Equal?" (NeurIPS; google/compare_gan v1,
``compare_gan/src/params.py``, ``GetDefaultWideRange`` and the per-GAN ranges): for every method
the same number of configurations is drawn at random from its ranges, each trained once, and the
best is then re-run over seeds.

The ranges belong to the constraints: each tunable class declares ``search_space`` (and
``search_fixed``), with the range types and compare_gan's shared tables of
:mod:`lipgan.core.search_space`. The built-ins' choices, with their sources:

* penalty weights (gradient penalty λ, Lipschitz penalty λ, DRAGAN λ, R1 γ): log-uniform on
  [0.1, 100] (compare_gan ``lambda``: 10^[−1, 2]);
* weight clipping's c: log-uniform on [0.001, 1] (compare_gan ``weight_clipping``: 10^[−3, 0]);
  with RMSProp, as in the WGAN paper (Arjovsky et al. 2017, Algorithm 1), so no β;
* DRAGAN's perturbation is the official code's, 0.5 times the data's standard deviation
  (``dragan.noise = 'reference'``), not an absolute 0.5 in data units;
* spectral norm (one power iteration, Miyato et al. 2018), Björck and AOL (with MaxMin, as their
  papers train them) have no parameter of their own.

A third-party constraint enters ``lipgan tune`` the same way, by declaring ``search_space``; one
without is left out of a default tune (with a line saying so) and refused by name in one line.

A draw is a pure function of (constraint name, config index): config 7 of ``gradient_penalty`` is
the same on every machine, for every data set and whatever the number of configs asked, so adding
configs to a search reuses the trials already run.
"""

from __future__ import annotations

import functools
import math
import zlib

import numpy as np

from lipgan.core.errors import ConfigError
from lipgan.core.search_space import OPTIMIZER_KEYS, check_space

#: Where the drawn configs come from; a different value is a different search.
SEARCH_SEED = 0x7E57


@functools.cache
def _default_registry():
    from lipgan.core.plugins import load_registry

    return load_registry().registry


def _class(constraint: str, registry=None) -> type:
    return (registry or _default_registry()).get("constraint", constraint)


def tunable(registry=None) -> tuple[list[str], dict[str, str]]:
    """``(names with a search space, {name: why it is left out})`` over the registered constraints."""
    registry = registry or _default_registry()
    names, left_out = [], {}
    for name in registry.names("constraint"):
        cls = registry.get("constraint", name)
        try:
            if cls.search_space is None:
                raise ValueError(f"{cls.__name__} declares no search_space")
            check_space(name, cls.search_space)
            names.append(name)
        except ValueError as exc:
            left_out[name] = str(exc)
    return names, left_out


def space(constraint: str, registry=None) -> dict:
    """The ranges of ``constraint`` (its name, without a SPEC's ``:key=value``): its class's
    ``search_space``; one line when it has none."""
    cls = _class(constraint, registry)
    if cls.search_space is None:
        raise ConfigError(
            f"constraint {constraint!r} has no search space, so lipgan tune cannot search it; "
            f"give {cls.__module__}.{cls.__qualname__} a class attribute search_space "
            "(see lipgan.core.search_space)"
        )
    try:
        check_space(constraint, cls.search_space)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return dict(cls.search_space)


def fixed(constraint: str, registry=None) -> tuple[str, ...]:
    """Gin bindings every config of ``constraint`` gets unchanged (its ``search_fixed``)."""
    return tuple(_class(constraint, registry).search_fixed)


def draw(constraint: str, index: int, registry=None) -> dict:
    """Config ``index`` of ``constraint``: ``{parameter: value}`` (see the module docstring)."""
    rng = np.random.default_rng([SEARCH_SEED, zlib.crc32(constraint.encode()), int(index)])
    return {name: r.draw(rng) for name, r in space(constraint, registry).items()}


#: The learning-rate schedules of the shipped configs a search binds: ``linear_decay``, Adam's
#: rate falling linearly to 0 (parts/adam_linear_decay.gin: the toy configs, CIFAR-10's), and
#: ``constant``, Adam at a constant rate (wgangp_digits.gin; Lucic et al.'s searches too).
SCHEDULES = ("linear_decay", "constant")


def bindings(
    constraint: str, config: dict, steps: int, registry=None, schedule: str = "linear_decay"
) -> tuple[str, ...]:
    """The gin bindings of ``config`` for a run of ``steps`` iterations on a shipped config whose
    Adam has the ``schedule`` of :data:`SCHEDULES` (weight clipping's RMSProp: a constant rate).

    With ``linear_decay`` the critic's decay counts optimizer steps, ``n_critic`` per iteration,
    so it is bound to ``n_critic × steps`` for the rate to reach 0 on the last iteration whatever
    ``n_critic``; with ``constant`` the drawn rate is Adam's own (``steps`` unused).
    """
    if schedule not in SCHEDULES:
        raise ConfigError(f"unknown learning-rate schedule {schedule!r}; known: {SCHEDULES}")
    n_critic = int(config["n_critic"])
    lr = float(config["learning_rate"])
    out = [f"train.n_critic = {n_critic}"]
    if "beta_1" in config:
        if schedule == "constant":
            out += [f"critic/Adam.learning_rate = {lr!r}", f"generator/Adam.learning_rate = {lr!r}"]
        else:
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
    out += [
        f"{constraint}.{k} = {float(v)!r}" for k, v in config.items() if k not in OPTIMIZER_KEYS
    ]
    return (*fixed(constraint, registry), *out)


def describe(config: dict) -> str:
    """``lr 0.00146, β₁ 0.244, β₂ 0.999, n_critic 5, weight 2.15``: a config on one line (three
    significant digits, so that β₂ 0.999 is not shown as 1)."""
    names = {"learning_rate": "lr", "beta_1": "β₁", "beta_2": "β₂"}
    parts = []
    for key, value in config.items():
        text = f"{value:.3g}" if isinstance(value, float) else str(value)
        parts.append(f"{names.get(key, key)} {text}")
    return ", ".join(parts)


def score(result: dict | None, key: str | None = None) -> tuple[float, ...]:
    """The search's ranking key (higher is better), the one rule of a tuned study's random
    search, successive halving (:func:`lipgan.study.halving.mean_score`) and EMA decay choice
    (:mod:`lipgan.study.ema_choice`).

    On a point set (``key`` None): −W1, then high quality, then −reverse KL. The exact W1 between
    the generated and the real sample (:mod:`lipgan.metrics.toy`) plays the part FID plays in
    Lucic et al. 2018's selection: one distance between the two distributions, so it punishes a
    collapsed generator (on the grid, 100 % high quality on 1 of 25 modes has W1 ≈ 3.7) and one
    that spreads everywhere (8 ring modes at 2 % high quality) alike. Ranking by high quality
    first chose exactly those collapsed configs on the grid.

    On an image data set ``key`` is the first image metric's ranked value, lower is better (its
    :attr:`lipgan.core.metric.Metric.score_key`: FID's ``fid`` on CIFAR-10, as Lucic et al.; the
    digits classifier's ``digits_fd`` on digits; :meth:`lipgan.study.tune.TuneSpec.score_key`),
    and the score is ``(−value,)``. Either way a failed trial, or one whose value is missing or
    not finite (NaN), scores −inf: it is never chosen.
    """
    metrics = (result or {}).get("metrics") or {}
    if key is not None:
        value = metrics.get(key)
        ok = (result or {}).get("status") == "ok" and isinstance(value, (int, float))
        return (-float(value),) if ok and math.isfinite(value) else (-math.inf,)
    if (result or {}).get("status") != "ok" or "high_quality_fraction" not in metrics:
        return (-math.inf, -math.inf, -math.inf)
    w1 = _finite_or_inf(metrics.get("w1"))
    kl = _finite_or_inf(metrics.get("reverse_kl"))
    return (-w1, metrics["high_quality_fraction"], -kl)


def _finite_or_inf(value) -> float:
    return math.inf if value is None or not math.isfinite(value) else float(value)
