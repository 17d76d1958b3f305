"""``dragan``: DRAGAN (Kodali et al. 2017), λ·(‖∇D(x̃)‖ − 1)² at noisy copies x̃ of *real* data.

DRAGAN argues mode collapse comes from sharp critic gradients around the real data, so it enforces
the gradient norm only in a neighbourhood of the data manifold instead of on real–fake segments.
Two ways to draw x̃ (``noise``), each with ``noise_scale`` c = 0.5 by default:

* ``"gaussian"`` (default): x̃ = x + α·c·δ, δ ~ N(0, I) per element, α ~ U[0, 1] per example, with
  an *absolute* scale c. It follows the paper's formulation (Kodali et al. 2017, "How to Train
  Your DRAGAN", arXiv:1705.07215: a Gaussian perturbation δ ~ N(0, cI) of real points) with an
  interpolation factor α as in the official code. c is in data units: set it to about half the
  data's standard deviation. On [-1, 1] images, whose std is ≈ 0.5, the default is ≈ 3.5× the
  reference's perturbation (see below), which is why the second variant exists.
* ``"reference"``: what the official code does (kodalinaveen3/DRAGAN, ``DRAGAN.ipynb``,
  ``get_perturbed_batch``: ``x + 0.5 * x.std() * np.random.random(x.shape)``, then
  ``x + alpha * (x_p - x)``): x̃ = x + α·c·σ·u, u ~ U[0, 1) per element, α ~ U[0, 1] per
  example, σ the standard deviation of all elements of the minibatch. Here σ is taken over the
  *global* batch (a cross-replica all-reduce of the sums inside the replica function), so the
  penalty is the same on 1, 2 or 64 replicas; the official single-device code's minibatch is that
  global batch. No gradient flows through σ (the official code computes it in numpy).

All random numbers come from the StepContext, so an example sees the same x̃ on any replica count.
DRAGAN constrains the gradient only near the real data, so under it the engine's ``wasserstein``
metric is a critic gap E D(real) − E D(fake), not a W1 estimate.
"""

import tensorflow as tf

from lipgan import hookimpl
from lipgan.core.penalties import GradientNormPenalty, per_example_gradient_norm
from lipgan.core.search_space import ADAM, PENALTY_WEIGHT

NOISES = ("gaussian", "reference")


def perturb_real(real: tf.Tensor, ctx, noise_scale: float) -> tf.Tensor:
    """Points at a random fraction of a Gaussian step of scale ``noise_scale`` away from ``real``."""
    event_shape = real.shape[1:]
    alpha = ctx.uniform([1] * len(event_shape), dtype=real.dtype)
    delta = ctx.normal(event_shape, dtype=real.dtype)
    return real + alpha * noise_scale * delta


def global_batch_std(x: tf.Tensor, ctx) -> tf.Tensor:
    """Standard deviation (numpy's, ddof 0) of all elements of the *global* batch ``x`` is a slice of.

    Two cross-replica sums (the mean, then the squared deviations from it) inside the replica
    function; with one replica it is the local std. Not differentiated (``stop_gradient``).
    """
    x = tf.stop_gradient(tf.cast(x, tf.float32))
    count = float(ctx.global_batch_size * x.shape[1:].num_elements())
    if ctx.num_replicas == 1:
        total = lambda v: tf.reduce_sum(v)  # noqa: E731
    else:
        replica = tf.distribute.get_replica_context()
        if replica is None:
            raise RuntimeError("dragan(noise='reference') must run inside strategy.run")
        total = lambda v: replica.all_reduce(tf.distribute.ReduceOp.SUM, tf.reduce_sum(v))  # noqa: E731
    mean = total(x) / count
    return tf.sqrt(total(tf.square(x - mean)) / count)


def perturb_real_reference(real: tf.Tensor, ctx, noise_scale: float) -> tf.Tensor:
    """The official DRAGAN code's x + α·c·σ·U[0, 1), with σ the global batch's std."""
    event_shape = real.shape[1:]
    alpha = ctx.uniform([1] * len(event_shape), dtype=real.dtype)
    u = ctx.uniform(event_shape, dtype=real.dtype)
    sigma = tf.cast(global_batch_std(real, ctx), real.dtype)
    return real + alpha * noise_scale * sigma * u


class Dragan(GradientNormPenalty):
    """λ·(‖∇D(x̃)‖ − 1)² at perturbations x̃ of real examples (``noise``: see the module doc).

    Args:
        weight: λ, >= 0.
        noise_scale: c, the perturbation's scale (in data units for ``'gaussian'``, relative to
            the batch's standard deviation for ``'reference'``), >= 0.
        noise: ``'gaussian'`` (the paper's formulation) or ``'reference'`` (the official code's).
        fast_relu: ``'auto'`` (default), True or False: swap the critic's (leaky) ReLUs for ones
            whose second derivative is declared zero, an exact speed-up of the double backprop
            (:class:`lipgan.core.penalties.GradientNormPenalty`).

    Raises:
        ValueError: a negative weight or scale, or an unknown ``noise``.
    """

    name = "dragan"
    #: ``lipgan tune``'s ranges (compare_gan's; :mod:`lipgan.core.search_space`).
    search_space = {**ADAM, "weight": PENALTY_WEIGHT}
    #: DRAGAN's perturbation as the official code's: 0.5 × the data's standard deviation.
    search_fixed = ("dragan.noise = 'reference'", "dragan.noise_scale = 0.5")
    description = "DRAGAN: weight·(‖∇D(x̃)‖ − 1)² around noisy real data (Kodali et al. 2017)."

    def __init__(
        self,
        weight: float = 10.0,
        noise_scale: float = 0.5,
        noise: str = "gaussian",
        fast_relu="auto",
    ):
        if weight < 0 or noise_scale < 0:
            raise ValueError(
                f"dragan needs weight >= 0 and noise_scale >= 0, got {weight}, {noise_scale}"
            )
        if noise not in NOISES:
            raise ValueError(f"dragan.noise must be one of {NOISES}, got {noise!r}")
        self.weight = float(weight)
        self.noise_scale = float(noise_scale)
        self.noise = noise
        super().__init__(fast_relu)

    def penalty(self, critic, real, fake, ctx):
        perturb = perturb_real_reference if self.noise == "reference" else perturb_real
        norm = per_example_gradient_norm(critic, perturb(real, ctx, self.noise_scale))
        return self.weight * tf.square(norm - 1.0)


@hookimpl
def lipgan_register_constraints(register):
    register(Dragan)
