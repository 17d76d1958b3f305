"""Fig. 1a of Gulrajani et al. (2017): for each toy set a ReLU MLP critic 2→512³→1 trained to
(near) optimality against the paper's *fixed* generator (real + N(0, 1) noise) under each
constraint, and its value surface on a grid. See :mod:`lipgan.reproduce.fig1` for the whole figure.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from lipgan.reproduce.fig1_setup import TOY_SETS, Settings, _constraint, _elapsed, _optimizer

#: Fig. 1a rows: the paper's two, then the certified constructions (an addition to the paper).
FIG1A_KINDS = ("weight_clip", "gradient_penalty", "bjorck", "aol")

#: Critic activation per row: a construction keeps ‖∇D‖ = 1 only with a norm-preserving
#: activation (LNets' MaxMin); the paper's rows keep its ReLU critic.
FIG1A_ACTIVATION = {"bjorck": "maxmin", "aol": "maxmin"}


def fixed_generator_batches(toy_set: str, s: Settings) -> tuple[np.ndarray, np.ndarray]:
    """Every training batch of a 1a row, drawn up front: ``(real, fake)``, each
    ``[s.a_steps, s.batch_size, 2]``, in the order (and from the generator) the per-step loop drew
    them, so the critic sees the same data as when each step sampled its own batch."""
    from lipgan.data.toy import SAMPLERS

    sampler = SAMPLERS[toy_set]
    rng = np.random.default_rng(s.seed)
    real = np.empty((s.a_steps, s.batch_size, 2), np.float32)
    fake = np.empty_like(real)
    for i in range(s.a_steps):
        real[i] = sampler(s.batch_size, rng)
        fake[i] = fixed_generator(real[i], rng)
    return real, fake


def critic_trainer(kind: str, s: Settings):
    """A fresh 1a critic and ``train(real, fake, start)``, which runs ``len(real)`` critic steps,
    numbered from ``start``, on the batches ``real[i]``, ``fake[i]`` in one compiled call and
    returns the last step's loss.

    One call runs every step (a ``tf.range`` loop, as lipgan's engine runs
    ``steps_per_execution`` iterations per call): the steps of these small critics are short
    enough that a Python call, argument conversion and dispatch per step are a noticeable share of
    them (benchmarks/RESULTS.md, "`lipgan reproduce fig1`"). ``s.a_jit_compile`` chooses XLA or plain
    ``tf.function`` for that call.
    """
    import keras
    import tensorflow as tf

    from lipgan.core.constraint import StepContext
    from lipgan.models import mlp_critic

    keras.utils.set_random_seed(s.seed)
    critic = mlp_critic(
        (2,),
        width=s.a_width,
        depth=s.a_depth,
        kernel_initializer=s.a_init,
        activation=FIG1A_ACTIVATION.get(kind, "relu"),
    )
    constraint = _constraint(kind, s.a_clip_c)
    critic = constraint.wrap_critic(critic)
    optimizer = _optimizer(kind, s.a_clip_lr if kind == "weight_clip" else s.a_gp_lr)
    optimizer.build(critic.trainable_variables)

    def step(real, fake, i):
        ctx = StepContext(
            seed=s.seed, step=i, phase=0, global_batch_size=s.batch_size, num_replicas=1
        )
        with tf.GradientTape() as tape:
            scores = tf.reshape(critic(tf.concat([real, fake], 0), training=True), [-1])
            loss = tf.reduce_mean(scores[s.batch_size :]) - tf.reduce_mean(scores[: s.batch_size])
            penalty = constraint.penalty(critic, real, fake, ctx)
            if penalty is not None:
                loss += tf.reduce_mean(penalty)
        variables = critic.trainable_variables
        grads = [
            tf.zeros_like(v) if g is None else g
            for g, v in zip(tape.gradient(loss, variables), variables)
        ]
        optimizer.apply_gradients(zip(grads, variables))
        constraint.after_update(critic)
        return loss

    @tf.function(jit_compile=s.a_jit_compile)
    def train_steps(real, fake, start):
        loss = tf.constant(np.nan, tf.float32)
        for i in tf.range(tf.shape(real, out_type=tf.int64)[0]):
            loss = step(real[i], fake[i], start + i)
        return loss

    def train(real, fake, start: int = 0) -> float:
        loss = train_steps(tf.constant(real), tf.constant(fake), tf.constant(start, tf.int64))
        return float(loss)

    return critic, train


def train_critic_against_fixed_generator(toy_set: str, kind: str, s: Settings):
    """A fresh critic trained for ``s.a_steps`` against real + N(0, 1) noise; returns it and the
    last step's loss (:func:`critic_trainer`, every step in one call)."""
    critic, train = critic_trainer(kind, s)
    return critic, train(*fixed_generator_batches(toy_set, s))


def fixed_generator(real: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The paper's fixed generator for Fig. 1a: *this* real batch plus unit-variance Gaussian noise.

    Row i of the result is real[i] + N(0, I), as in the official ``gan_toy.py``, so the gradient
    penalty's interpolate real[i] + ε(fake[i] − real[i]) lies within one noise step of real[i].
    """
    real = np.asarray(real, np.float32)
    return (real + rng.standard_normal(real.shape)).astype(np.float32)


def fig1a_row(toy_set: str, kind: str, s: Settings) -> tuple[dict, str]:
    """One Fig. 1a panel: the trained critic's numbers and surface, and its log line."""
    from lipgan.data.toy import SAMPLERS
    from lipgan.metrics import diagnostics
    from lipgan.plots.toy import critic_surface

    started, cpu = time.perf_counter(), time.process_time()
    rng = np.random.default_rng(s.seed + 1)
    real = SAMPLERS[toy_set](s.points, rng)
    fake = fixed_generator(real, rng)
    critic, loss = train_critic_against_fixed_generator(toy_set, kind, s)
    _, _, values = critic_surface(critic, s.lim, s.grid)
    grads = diagnostics.gradient_norm_stats(critic, real, fake, seed=s.seed)
    row = {
        "final_critic_loss": loss,
        "grad_norm": grads,
        "lipschitz_estimate": diagnostics.empirical_lipschitz(critic, real, fake),
        "surface": np.round(values.astype(np.float64), 6).tolist(),
        "real": np.round(real, 4).tolist(),
        "fake": np.round(fake, 4).tolist(),
    }
    # The certified rows' bound (an SVD of each kernel the critic computes with), so that an
    # estimate above it shows in the JSON and the log; clipping and GP certify nothing.
    bound = _constraint(kind, s.a_clip_c).lipschitz_bound(critic)
    if bound is not None:
        row["lipschitz_bound"] = bound
    bound = "" if bound is None else f"  bound {bound:.7f}"
    line = (
        f"fig1a {toy_set:<12} {kind:<17} loss {loss:+.4f}  mean ‖∇D‖ at interpolates "
        f"{grads['interp/mean']:.3f}  Lipschitz estimate {row['lipschitz_estimate']:.3f}{bound}"
        f"  ({_elapsed(started, cpu)})"
    )
    return row, line


def fig1a(s: Settings, log: Callable[[str], None]) -> dict:
    result = {}
    for toy_set, _ in TOY_SETS:
        result[toy_set] = {}
        for kind in FIG1A_KINDS:
            result[toy_set][kind], line = fig1a_row(toy_set, kind, s)
            log(line)
    return result
