"""``gradient_penalty``: WGAN-GP (Gulrajani et al. 2017), λ·(‖∇D(x̂)‖ − 1)² [+ ε_drift·D(x)²].

x̂ = real + ε(fake − real) with ε ~ U[0, 1] per example, drawn through the StepContext so the same
example gets the same ε on any replica count. The gradient is taken with an inner ``GradientTape``
nested in the engine's critic tape (double backprop). The norm uses ``sqrt(Σg² + 1e-12)``: ``sqrt``
has infinite slope at 0, which would turn a zero gradient into NaN in the second derivative.

``drift`` adds ε_drift·D(real)² per example (Karras et al. 2018, ProGAN, ε_drift = 0.001): WGAN
losses only see score *differences*, so without it the critic's output may drift far from zero.
"""

import tensorflow as tf

from lipgan import Constraint, hookimpl
from lipgan.models.checks import warn_if_batch_norm

NORM_EPSILON = 1e-12


def per_example_gradient_norm(critic, x: tf.Tensor) -> tf.Tensor:
    """‖∇ₓD(x)‖₂ per example, in float32, differentiable w.r.t. the critic's weights."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        d = critic(x, training=False)
    g = tf.cast(tape.gradient(d, x), tf.float32)
    axes = list(range(1, len(g.shape)))
    return tf.sqrt(tf.reduce_sum(tf.square(g), axis=axes) + NORM_EPSILON)


def interpolate(real: tf.Tensor, fake: tf.Tensor, ctx) -> tf.Tensor:
    """Random points on the segments between paired real and fake examples."""
    eps = ctx.uniform([1] * (len(real.shape) - 1), dtype=real.dtype)
    return real + eps * (fake - real)


class GradientPenalty(Constraint):
    """λ·(‖∇D(x̂)‖ − target)² at random interpolates x̂ (two-sided; ``one_sided`` penalizes only > target)."""

    name = "gradient_penalty"
    description = "WGAN-GP: weight·(‖∇D(x̂)‖ − target)² at random interpolates (Gulrajani et al. 2017)."

    def __init__(
        self,
        weight: float = 10.0,
        target: float = 1.0,
        one_sided: bool = False,
        drift: float = 0.0,
    ):
        if weight < 0 or target <= 0:
            raise ValueError(
                f"gradient_penalty needs weight >= 0 and target > 0, got {weight}, {target}"
            )
        if drift < 0:
            raise ValueError(f"gradient_penalty.drift must be >= 0, got {drift}")
        self.weight = float(weight)
        self.target = float(target)
        self.one_sided = bool(one_sided)
        self.drift = float(drift)

    def wrap_critic(self, critic):
        warn_if_batch_norm(critic, self.name)  # batch statistics couple the per-example penalty
        return critic

    def penalty(self, critic, real, fake, ctx):
        norm = per_example_gradient_norm(critic, interpolate(real, fake, ctx))
        excess = norm - self.target
        if self.one_sided:
            excess = tf.nn.relu(excess)
        penalty = self.weight * tf.square(excess)
        if self.drift:
            penalty += self.drift * drift_term(critic, real)
        return penalty


def drift_term(critic, real: tf.Tensor) -> tf.Tensor:
    """D(x)² per example on real data (unweighted), in float32."""
    scores = tf.reshape(tf.cast(critic(real, training=False), tf.float32), [-1])
    return tf.square(scores)


@hookimpl
def lipgan_register_constraints(register):
    register(GradientPenalty)
