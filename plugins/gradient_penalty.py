"""``gradient_penalty``: WGAN-GP (Gulrajani et al. 2017), λ·(‖∇D(x̂)‖ − 1)² [+ ε_drift·D(x)²].

x̂ = real + ε(fake − real) with ε ~ U[0, 1] per example, drawn through the StepContext so the same
example gets the same ε on any replica count. The gradient is taken with an inner ``GradientTape``
nested in the engine's critic tape (double backprop). The norm uses ``sqrt(Σg² + 1e-12)``: ``sqrt``
has infinite slope at 0, which would turn a zero gradient into NaN in the second derivative.

``drift`` adds ε_drift·D(real)² per example (Karras et al. 2018, ProGAN, ε_drift = 0.001): WGAN
losses only see score *differences*, so without it the critic's output may drift far from zero.

Two speed-ups. ``fast_relu`` swaps the critic's (Leaky)ReLUs for ones that declare their second
derivative zero (exact; see ``lipgan.models.pruned_relu``): ``'auto'`` (default) does it whenever
the wrap-time probe check shows the critic unchanged, ``True`` insists (one-line error otherwise),
``False`` opts out. ``every=k`` is StyleGAN2's lazy regularization: the penalty, scaled by
k, only on iterations where ``ctx.step % k == 0`` (the same steps on every replica), skipped by a
``tf.cond`` otherwise.
"""

import tensorflow as tf

from lipgan import Constraint, hookimpl
from lipgan.models.checks import warn_if_batch_norm
from lipgan.models.pruned_relu import check_fast_relu, maybe_prune
from lipgan.penalties import interpolate, per_example_gradient_norm


class GradientPenalty(Constraint):
    """λ·(‖∇D(x̂)‖ − target)² at random interpolates x̂ (two-sided; ``one_sided`` penalizes only > target)."""

    name = "gradient_penalty"
    description = (
        "WGAN-GP: weight·(‖∇D(x̂)‖ − target)² at random interpolates (Gulrajani et al. 2017)."
    )

    def __init__(
        self,
        weight: float = 10.0,
        target: float = 1.0,
        one_sided: bool = False,
        drift: float = 0.0,
        fast_relu: bool | str = "auto",
        every: int = 1,
    ):
        if weight < 0 or target <= 0:
            raise ValueError(
                f"gradient_penalty needs weight >= 0 and target > 0, got {weight}, {target}"
            )
        if drift < 0:
            raise ValueError(f"gradient_penalty.drift must be >= 0, got {drift}")
        if int(every) != every or every < 1:
            raise ValueError(f"gradient_penalty.every must be an integer >= 1, got {every!r}")
        self.weight = float(weight)
        self.target = float(target)
        self.one_sided = bool(one_sided)
        self.drift = float(drift)
        self.fast_relu = check_fast_relu(fast_relu, self.name)
        self.every = int(every)

    def wrap_critic(self, critic):
        warn_if_batch_norm(critic, self.name)  # batch statistics couple the per-example penalty
        return maybe_prune(critic, self.fast_relu, self.name)

    def _weighted_penalty(self, critic, x_hat, weight):
        norm = per_example_gradient_norm(critic, x_hat)
        excess = norm - self.target
        if self.one_sided:
            excess = tf.nn.relu(excess)
        return weight * tf.square(excess)

    def penalty(self, critic, real, fake, ctx):
        x_hat = interpolate(real, fake, ctx)
        if self.every == 1:
            penalty = self._weighted_penalty(critic, x_hat, self.weight)
        else:
            # Lazy regularization (Karras et al. 2020): weight·k every k-th step, nothing in
            # between. ε is drawn outside the cond so the StepContext call order never depends on
            # the branch.
            active = tf.equal(tf.math.floormod(tf.cast(ctx.step, tf.int64), self.every), 0)
            penalty = tf.cond(
                active,
                lambda: self._weighted_penalty(critic, x_hat, self.weight * self.every),
                lambda: tf.zeros([tf.shape(real)[0]], tf.float32),
            )
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
