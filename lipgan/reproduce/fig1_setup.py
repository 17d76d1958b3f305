"""What every row of the Fig. 1 reproduction (:mod:`lipgan.reproduce.fig1`) shares: the toy sets
and clipping values of the paper, the budgets and optimizers of one reproduction (:class:`Settings`,
:data:`FULL`, :data:`QUICK`), the constraint and optimizer a row trains with, and how a row reports
its cost.
"""

from __future__ import annotations

import dataclasses
import time

#: (name, display label) of the toy sets, in the paper's column order.
TOY_SETS = (
    ("8gaussians", "8 Gaussians"),
    ("25gaussians", "25 Gaussians"),
    ("swissroll", "Swiss Roll"),
)

CLIP_VALUES = (0.1, 0.01, 0.001)

#: The paper's toy λ (``LAMBDA = .1`` in the official gan_toy.py).
TOY_GP_WEIGHT = 0.1


@dataclasses.dataclass(frozen=True)
class Settings:
    """Budgets and optimizers of one reproduction. The paper does not state Fig. 1's step counts."""

    batch_size: int = 256
    seed: int = 0
    # 1a: critic-only training against the fixed generator
    # 600: beyond it the certified critics' surfaces hardly change and the GP critic's (lr 1e-3)
    # fluctuates without settling, so more steps buy no closer optimum (docs/fig1.md, "600 critic
    # steps for 1a"; benchmarks/fig1_rows/convergence.py).
    a_steps: int = 600
    a_width: int = 512
    a_depth: int = 3
    # The official code's 'he' init of the ReLU layers (its output layer's 'glorot' has variance
    # 2/513 where He's has 2/512: the same to 0.2 %).
    a_init: str = "he_uniform"
    # Adam(lr, 0.5, 0.9) and RMSProp(lr) as in the paper, but lr 1e-3 instead of 1e-4 / 5e-5 so
    # that a few hundred critic steps come close to the optimal critic of each constraint.
    a_gp_lr: float = 1e-3
    a_clip_lr: float = 1e-3
    a_clip_c: float = 0.01
    # XLA for the 1a training call: cheaper per critic step than tf.function for GP and AOL, no
    # dearer for clipping and Björck, for a few seconds of compilation per row
    # (benchmarks/fig1_rows/run.py; benchmarks/RESULTS.md, "`lipgan reproduce fig1`").
    a_jit_compile: bool = True
    grid: int = 128
    lim: float = 3.0
    points: int = 512
    # 1b: full WGAN, 12-layer critic and generator, Swiss roll
    b_iterations: int = 50  # generator updates, each after n_critic critic updates
    b_n_critic: int = 5
    b_width: int = 512
    b_depth: int = 12
    b_gp_lr: float = 1e-4
    b_init: str = "he_uniform"  # the official code's 'he' initialization of ReLU layers
    # tf.function, not XLA, for the 1b WGAN: XLA made an iteration of the 12-layer step no
    # cheaper and doubled the cost of its first call (benchmarks/RESULTS.md, "`lipgan reproduce
    # fig1`").
    b_jit_compile: bool = False
    # RMSProp moves each weight by ~lr per step: 1e-3 lets 250 critic steps push weights to ±c,
    # where the paper's 5e-5 would need the paper's (much longer, unstated) training.
    b_clip_lr: float = 1e-3
    hist_bins: int = 100

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


FULL = Settings()

#: For tests and smoke runs: 1b on width-128 nets for 5 iterations of one critic step each; 1a
#: without XLA, whose compilation per row 100 steps do not pay back.
QUICK = Settings(
    a_steps=100,
    grid=64,
    points=256,
    b_iterations=5,
    b_n_critic=1,
    b_width=128,
    a_jit_compile=False,
)


def _constraint(kind: str, c: float | None = None):
    from lipgan import constraints

    if kind == "weight_clip":
        return constraints.WeightClip(c=c)
    if kind == "gradient_penalty":
        return constraints.GradientPenalty(weight=TOY_GP_WEIGHT)
    return {"bjorck": constraints.Bjorck, "aol": constraints.AOL}[kind]()


def _optimizer(kind: str, lr: float):
    import keras

    if kind == "weight_clip":
        return keras.optimizers.RMSprop(learning_rate=lr)
    return keras.optimizers.Adam(learning_rate=lr, beta_1=0.5, beta_2=0.9)


def _elapsed(started: float, cpu: float) -> str:
    """Wall and CPU seconds since ``started``/``cpu`` (a row's cost on a shared machine)."""
    return f"{time.perf_counter() - started:.0f} s, {time.process_time() - cpu:.0f} CPU-s"
