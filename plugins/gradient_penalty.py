"""``gradient_penalty``: WGAN-GP (Gulrajani et al. 2017), λ·(‖∇D(x̂)‖ − γ)²/γ² [+ ε_drift·D(x)²].

x̂ = real + ε(fake − real) with ε ~ U[0, 1] per example, drawn through the StepContext so the same
example gets the same ε on any replica count. The gradient is taken with an inner ``GradientTape``
nested in the engine's critic tape (double backprop). The norm uses ``sqrt(Σg² + 1e-12)``: ``sqrt``
has infinite slope at 0, which would turn a zero gradient into NaN in the second derivative.

``drift`` adds ε_drift·D(real)² per example (Karras et al. 2018, ProGAN, ε_drift = 0.001): WGAN
losses only see score *differences*, so without it the critic's output may drift far from zero.

``target`` (γ) follows the published convention for a target other than 1: the penalty is
λ·(‖g‖ − γ)²/γ² = λ·(‖g‖/γ − 1)², as in ProGAN (Karras et al. 2018, ``loss.py`` ``D_wgangp_acgan``:
``gradient_penalty * (wgan_lambda / (wgan_target**2))``) and TF-GAN
(``tfgan.losses.wasserstein_gradient_penalty(target=...)``, which divides the slopes by the target).
λ then weighs the same *relative* violation whatever γ, and γ = 1 is WGAN-GP unchanged (the
earlier form without 1/γ²: CHANGELOG.md). On the fixed pair (:mod:`lipgan.testing.testbeds`), the
optimum is ‖∇D‖ = γ + dγ²/(2λ).

Two speed-ups. ``fast_relu`` swaps the critic's (Leaky)ReLUs for ones that declare their second
derivative zero (exact; see ``lipgan.core.pruned_relu``): ``'auto'`` (default) does it whenever
the wrap-time probe check shows the critic unchanged, ``True`` insists (one-line error otherwise),
``False`` opts out. ``every=k`` is StyleGAN2's lazy regularization (Karras et al. 2020,
Sec. 3.1): the penalty, scaled by k, only on critic updates where ``ctx.update % k == 0`` (the same
updates on every replica), skipped by a ``tf.cond`` otherwise. It is keyed on the critic-update index,
not on the iteration ``ctx.step``: keyed on ``step`` all ``n_critic`` updates of one iteration get
k·λ and the next (k − 1)·n_critic get none, and between bursts the critic leaves the constraint
(``docs/plugins.md``, "Lazy schedules", measures both on the fixed pair).

StyleGAN2 also rescales Adam for lazy regularization (learning rate × k/(k+1), β ↦ β^(k/(k+1)),
``training/training_loop.py``) because its regularizer is a *separate* optimizer step every k
minibatches: k + 1 steps per k minibatches. Here the lazy term is added to the loss of an ordinary
critic update, so the number of optimizer steps does not change and the rescaling does not apply
(the measurement is in ``docs/plugins.md``, "Lazy schedules").
"""

import tensorflow as tf

from lipgan import hookimpl
from lipgan.core.penalties import GradientNormPenalty, interpolate, per_example_gradient_norm
from lipgan.core.search_space import ADAM, PENALTY_WEIGHT


class GradientPenalty(GradientNormPenalty):
    """λ·(‖∇D(x̂)‖ − γ)²/γ² at random interpolates x̂ (``one_sided`` penalizes only ‖∇D‖ > γ).

    Args:
        weight: λ, >= 0 (WGAN-GP's 10 by default; the toy configs use 0.1).
        target: γ, the gradient norm aimed at, > 0.
        one_sided: penalize only gradient norms above γ.
        drift: ε_drift of ProGAN's drift term ε_drift·D(real)², >= 0 (0: off).
        fast_relu: ``'auto'`` (default), True or False: swap the critic's (leaky) ReLUs for ones
            whose second derivative is declared zero, an exact speed-up of the double backprop
            (:class:`lipgan.core.penalties.GradientNormPenalty`).
        every: apply the penalty, scaled by ``every``, on every ``every``-th critic update only
            (lazy regularization; 1: every update).

    Raises:
        ValueError: a negative weight or drift, a target <= 0, or ``every`` not an integer >= 1.
    """

    name = "gradient_penalty"
    #: ``lipgan tune``'s ranges (compare_gan's; :mod:`lipgan.core.search_space`).
    search_space = {**ADAM, "weight": PENALTY_WEIGHT}
    description = (
        "WGAN-GP: weight·(‖∇D(x̂)‖ − target)²/target² at random interpolates "
        "(Gulrajani et al. 2017)."
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
        super().__init__(fast_relu)
        self.every = int(every)

    def _weighted_penalty(self, critic, x_hat, weight):
        norm = per_example_gradient_norm(critic, x_hat)
        excess = norm - self.target
        if self.one_sided:
            excess = tf.nn.relu(excess)
        return (weight / self.target**2) * tf.square(excess)

    def penalty(self, critic, real, fake, ctx):
        x_hat = interpolate(real, fake, ctx)
        if self.every == 1:
            penalty = self._weighted_penalty(critic, x_hat, self.weight)
        else:
            # Lazy regularization (Karras et al. 2020): weight·k every k-th critic update, nothing
            # in between. ε is drawn outside the cond so the StepContext call order never depends
            # on the branch.
            active = lazy_step_is_active(ctx, self.every)
            penalty = tf.cond(
                active,
                lambda: self._weighted_penalty(critic, x_hat, self.weight * self.every),
                lambda: tf.zeros([tf.shape(real)[0]], tf.float32),
            )
        if self.drift:
            penalty += self.drift * drift_term(critic, real)
        return penalty


def lazy_step_is_active(ctx, every: int) -> tf.Tensor:
    """Whether this critic update is one of every ``every``-th, counted over the whole run
    (``ctx.update``, the critic-update index: see :class:`lipgan.StepContext`)."""
    return tf.equal(tf.math.floormod(tf.cast(ctx.update, tf.int64), every), 0)


def drift_term(critic, real: tf.Tensor) -> tf.Tensor:
    """D(x)² per example on real data (unweighted), in float32."""
    scores = tf.reshape(tf.cast(critic(real, training=False), tf.float32), [-1])
    return tf.square(scores)


@hookimpl
def lipgan_register_constraints(register):
    register(GradientPenalty)
