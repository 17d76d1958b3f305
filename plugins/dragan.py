"""``dragan``: DRAGAN (Kodali et al. 2017), λ·(‖∇D(x̃)‖ − 1)² at noisy copies x̃ of *real* data.

DRAGAN argues mode collapse comes from sharp critic gradients around the real data, so it enforces
the gradient norm only in a neighbourhood of the data manifold instead of on real–fake segments.
x̃ = x + α·c·δ with δ ~ N(0, I) per element and α ~ U[0, 1] per example, both drawn through the
StepContext. The reference code scales the noise by the batch's standard deviation; a per-replica
std would change with the replica count, so here ``noise_scale`` (c) is an absolute scale: set it to
about half the data's standard deviation (the default 0.5 suits data normalized to unit std).
"""

import tensorflow as tf

from lipgan import Constraint, hookimpl
from lipgan.models.pruned_relu import check_fast_relu, maybe_prune
from lipgan.penalties import per_example_gradient_norm


def perturb_real(real: tf.Tensor, ctx, noise_scale: float) -> tf.Tensor:
    """Points at a random fraction of a Gaussian step of scale ``noise_scale`` away from ``real``."""
    event_shape = real.shape[1:]
    alpha = ctx.uniform([1] * len(event_shape), dtype=real.dtype)
    delta = ctx.normal(event_shape, dtype=real.dtype)
    return real + alpha * noise_scale * delta


class Dragan(Constraint):
    """λ·(‖∇D(x̃)‖ − 1)² at Gaussian perturbations x̃ of real examples."""

    name = "dragan"
    description = "DRAGAN: weight·(‖∇D(x̃)‖ − 1)² around noisy real data (Kodali et al. 2017)."

    def __init__(self, weight: float = 10.0, noise_scale: float = 0.5, fast_relu="auto"):
        if weight < 0 or noise_scale < 0:
            raise ValueError(
                f"dragan needs weight >= 0 and noise_scale >= 0, got {weight}, {noise_scale}"
            )
        self.weight = float(weight)
        self.noise_scale = float(noise_scale)
        self.fast_relu = check_fast_relu(fast_relu, self.name)

    def wrap_critic(self, critic):
        # Exact speed-up of the double backprop (lipgan.models.pruned_relu; as gradient_penalty).
        return maybe_prune(critic, self.fast_relu, self.name)

    def penalty(self, critic, real, fake, ctx):
        norm = per_example_gradient_norm(critic, perturb_real(real, ctx, self.noise_scale))
        return self.weight * tf.square(norm - 1.0)


@hookimpl
def lipgan_register_constraints(register):
    register(Dragan)
