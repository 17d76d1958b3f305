"""Fig. 1b of Gulrajani et al. (2017): a 12-layer WGAN on the Swiss roll under clipping
c ∈ {0.1, 0.01, 0.001} and under GP, trained by lipgan's engine; the per-layer gradient norms of
its critic loss, their spread, its weight histograms, and the paper's claim on them
(:func:`check_fig1b`). See :mod:`lipgan.reproduce.fig1` for the whole figure.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from lipgan.reproduce.fig1_setup import CLIP_VALUES, Settings, _constraint, _elapsed, _optimizer


def _config_name(kind: str, c: float | None) -> str:
    return f"weight_clip_c{c:g}" if kind == "weight_clip" else "gradient_penalty"


def train_deep_wgan(kind: str, c: float | None, s: Settings):
    """The 12-layer WGAN of Fig. 1b on the Swiss roll, trained by lipgan's engine; returns the WGAN."""
    import keras
    import tensorflow as tf

    from lipgan.core.engine import WGAN
    from lipgan.core.step_config import StepConfig
    from lipgan.data.pipeline import dataset
    from lipgan.models import mlp_critic, mlp_generator

    keras.utils.set_random_seed(s.seed)
    lr = s.b_clip_lr if kind == "weight_clip" else s.b_gp_lr
    wgan = WGAN(
        tf.distribute.get_strategy(),
        critic=lambda shape: mlp_critic(shape, s.b_width, s.b_depth, s.b_init),
        generator=lambda shape: mlp_generator(shape, 2, s.b_width, s.b_depth, s.b_init),
        critic_optimizer=lambda: _optimizer(kind, lr),
        generator_optimizer=lambda: _optimizer(kind, lr),
        constraint=_constraint(kind, c),
        data_shape=(2,),
        config=StepConfig(s.batch_size, s.b_n_critic, s.seed, jit_compile=s.b_jit_compile),
    )
    data = dataset("lipgan_toy/swissroll")(s.batch_size, s.seed)
    if s.b_iterations:
        wgan.iterate(wgan.distribute(data), s.b_iterations)
    return wgan, data


def _critic_weights(critic) -> np.ndarray:
    return np.concatenate([np.asarray(v).reshape(-1) for v in critic.trainable_variables])


FIG1B_CONFIGS = tuple(("weight_clip", c) for c in CLIP_VALUES) + (("gradient_penalty", None),)


def fig1b_row(kind: str, c: float | None, s: Settings) -> tuple[dict, str]:
    """One Fig. 1b configuration: per-layer gradient norms, their spread, the weight histogram."""
    import tensorflow as tf

    from lipgan.metrics import diagnostics

    started, cpu = time.perf_counter(), time.process_time()
    name = _config_name(kind, c)
    wgan, data = train_deep_wgan(kind, c, s)
    real = np.asarray(next(iter(data)))
    z = tf.random.stateless_normal([len(real), *wgan.latent_shape], seed=[s.seed, 1])
    fake = np.asarray(wgan.generator(z, training=False))
    norms = diagnostics.layer_gradient_norms(wgan.critic, real, fake)
    weights = _critic_weights(wgan.critic)
    bound = c if c else float(np.abs(weights).max())
    counts, edges = np.histogram(weights, bins=s.hist_bins, range=(-bound, bound))
    row = {
        "layer_grad_norms": norms,
        "max_over_min": max_over_min(norms),
        "weight_histogram": {
            "edges": edges.tolist(),
            "counts": counts.tolist(),
            "frac_at_bounds": float(np.mean(np.abs(weights) >= 0.999 * bound)),
        },
    }
    line = (
        f"fig1b {name:<19} ‖∂L/∂h‖ first {norms[0]:.2e} last {norms[-1]:.2e} "
        f"max/min {row['max_over_min']:.1e}  ({_elapsed(started, cpu)})"
    )
    return row, line


def _fig1b_result(rows: dict) -> dict:
    """``{name: row}`` of :func:`fig1b_row` as the JSON's three tables, in the paper's order."""
    names = [_config_name(kind, c) for kind, c in FIG1B_CONFIGS]
    return {
        "layer_grad_norms": {n: rows[n]["layer_grad_norms"] for n in names},
        "max_over_min": {n: rows[n]["max_over_min"] for n in names},
        "weight_histograms": {n: rows[n]["weight_histogram"] for n in names},
    }


def fig1b(s: Settings, log: Callable[[str], None]) -> dict:
    rows = {}
    for kind, c in FIG1B_CONFIGS:
        rows[_config_name(kind, c)], line = fig1b_row(kind, c, s)
        log(line)
    return _fig1b_result(rows)


def max_over_min(norms) -> float:
    """Spread of the per-layer norms; a layer whose gradient is exactly 0 (every ReLU below it dead
    or underflow) counts as an infinite spread, written as 1e300 to keep the JSON standard."""
    norms = np.asarray(norms, np.float64)
    if (norms <= 0).any():
        return 1e300
    return float(norms.max() / norms.min())


# -- the qualitative claim, shared by the docs and the test --------------------------------------
def check_fig1b(result: dict) -> list[str]:
    """The paper's Fig. 1b claim on our numbers; returns the failures (empty = it holds).

    Clipping's per-layer norms change by ≥ 10² across the layers for c = 0.1 or c = 0.001 (explode
    or vanish); the gradient penalty's stay within 10×.
    """
    ratios = result["fig1b"]["max_over_min"]
    failures = []
    clip = {c: ratios[_config_name("weight_clip", c)] for c in (0.1, 0.001)}
    if max(clip.values()) < 1e2:
        failures.append(
            f"clipping norms vary by only {clip} (max/min) across layers; expected >= 1e2"
        )
    if ratios["gradient_penalty"] > 10:
        failures.append(
            f"GP norms vary by {ratios['gradient_penalty']:.1f}x across layers; expected <= 10x"
        )
    return failures
