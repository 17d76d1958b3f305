"""``spectral_norm``: SN-GAN (Miyato et al. 2018) via ``keras.layers.SpectralNormalization``.

Every Dense and Conv layer of the critic is wrapped at build time. Keras 3's wrapper divides the
kernel by its power-iteration estimate of σ_max and advances the iteration on each ``training=True``
call; the engine makes exactly one such call per critic step (on real and fake together), so the
estimate advances once per step on every replica alike.

**Replicas.** The power-iteration vector ``u`` is a non-aggregated variable and the wrapper
overwrites the kernel with kernel/σ in replica context: each replica updates its own copy, and with
Keras' wrapper the copies stay equal only because every replica computes bitwise the same numbers
(nothing re-syncs them; a copy that drifted would stay drifted). lipgan's wrapper,
:class:`ReplicaSyncedSpectralNormalization`, makes the sync hold by construction: after the power
iteration, the new ``u`` and σ are taken from replica 0 on every replica (an all-reduce SUM of replica
0's value and zeros, which is exact), so every copy of ``u`` and of the normalized kernel is set from
the same numbers. What remains assumed is what ``tf.distribute`` assumes of every mirrored variable:
identical all-reduced gradients applied by identical optimizer steps keep the kernels equal. With one
replica it computes exactly what Keras' wrapper computes.
"""

import keras
import tensorflow as tf
from keras import ops

from lipgan import Constraint, hookimpl
from lipgan.core.search_space import ADAM

WRAPPED_LAYERS = (keras.layers.Dense, keras.layers.Conv1D, keras.layers.Conv2D, keras.layers.Conv3D)


def from_first_replica(value: tf.Tensor) -> tf.Tensor:
    """Replica 0's ``value`` on every replica (identity outside a multi-replica ``strategy.run``).

    An all-reduce SUM of replica 0's value and zeros from the others: x + 0 = x exactly, and
    ``tf.where`` (not a multiplication by 0) keeps a NaN on another replica from leaking in.
    """
    replica = tf.distribute.get_replica_context()
    if replica is None or replica.num_replicas_in_sync == 1:
        return value
    first = tf.equal(replica.replica_id_in_sync_group, 0)
    mine = tf.where(first, value, tf.zeros_like(value))
    return replica.all_reduce(tf.distribute.ReduceOp.SUM, mine)


@keras.saving.register_keras_serializable(package="lipgan")
class ReplicaSyncedSpectralNormalization(keras.layers.SpectralNormalization):
    """Keras' ``SpectralNormalization`` whose ``u`` and σ come from replica 0 on every replica."""

    def call(self, inputs, training=False):
        if training:
            u, sigma = self.power_iteration()
            # Outside any cond: a cross-replica collective must run on every replica alike.
            u, sigma = from_first_replica(u), from_first_replica(sigma)
            kernel = self.kernel.value
            zero = ops.all(ops.equal(kernel, 0))  # Keras leaves an all-zero kernel as it is
            self.vector_u.assign(ops.where(zero, self.vector_u.value, u))
            self.kernel.assign(ops.where(zero, kernel, ops.divide(kernel, sigma)))
        output = self.layer(inputs)
        return ops.cast(output, inputs.dtype)

    def power_iteration(self):
        """(new u, σ estimate) after ``power_iterations`` steps from the stored ``u``."""
        weights = ops.reshape(self.kernel.value, [-1, self.kernel_shape[-1]])
        u = self.vector_u.value
        for _ in range(self.power_iterations):
            v = keras.utils.normalize(ops.matmul(u, ops.transpose(weights)), axis=None)
            u = keras.utils.normalize(ops.matmul(v, weights), axis=None)
        u, v = ops.stop_gradient(u), ops.stop_gradient(v)
        sigma = ops.matmul(ops.matmul(v, weights), ops.transpose(u))
        return ops.cast(u, self.vector_u.dtype), ops.cast(sigma, self.kernel.dtype)


class SpectralNorm(Constraint):
    """Normalize each Dense/Conv kernel of the critic by its largest singular value.

    Args:
        power_iterations: power-iteration steps per training call that update the estimate of
            each kernel's largest singular value, >= 1.
        output_scale: a fixed factor on the critic's output, > 0 (1: none). An intervention, not
            a remedy: spectral norm bounds every layer's largest singular value by 1, and the
            critics it trains keep gradient norms far below that bound; scaling the output by a
            fixed c gives the same critic c times the slope, so a study can ask whether the
            unused Lipschitz budget is what costs quality (docs/study.md).

    Raises:
        ValueError: ``power_iterations < 1`` or ``output_scale <= 0``.
    """

    name = "spectral_norm"
    #: ``lipgan tune``'s ranges (compare_gan's; :mod:`lipgan.core.search_space`).
    search_space = dict(ADAM)
    #: Runs recorded before ``output_scale`` existed (2026-12-06) trained the unscaled critic.
    unrecorded_defaults = {"output_scale": 1.0}
    description = (
        "Divide every Dense/Conv kernel by its spectral norm (SN-GAN, Miyato et al. 2018)."
    )

    def __init__(self, power_iterations: int = 1, output_scale: float = 1.0):
        if power_iterations < 1:
            raise ValueError(f"spectral_norm.power_iterations must be >= 1, got {power_iterations}")
        if not output_scale > 0:
            raise ValueError(f"spectral_norm.output_scale must be > 0, got {output_scale}")
        self.power_iterations = int(power_iterations)
        self.output_scale = float(output_scale)

    def _wrap(self, layer):
        clone = layer.__class__.from_config(layer.get_config())
        if isinstance(layer, WRAPPED_LAYERS):
            return ReplicaSyncedSpectralNormalization(
                clone, power_iterations=self.power_iterations, name=f"sn_{layer.name}"
            )
        return clone

    def wrap_critic(self, critic):
        wrapped = keras.models.clone_model(critic, clone_function=self._wrap)
        wrapped.build(critic.inputs[0].shape if critic.inputs else None)
        if self.output_scale == 1.0:
            return wrapped
        inputs = keras.Input(shape=critic.inputs[0].shape[1:])
        scaled = keras.layers.Rescaling(self.output_scale, dtype="float32", name="output_scale")
        return keras.Model(inputs, scaled(wrapped(inputs)), name=f"{wrapped.name}_scaled")


@hookimpl
def lipgan_register_constraints(register):
    register(SpectralNorm)
