"""``spectral_norm``: SN-GAN (Miyato et al. 2018) via ``keras.layers.SpectralNormalization``.

Every Dense and Conv layer of the critic is wrapped at build time. Keras 3's wrapper divides the
kernel by its power-iteration estimate of σ_max and advances the iteration on each ``training=True``
call; the engine makes exactly one such call per critic step (on real and fake together), so the
estimate advances once per step on every replica alike. The ``u`` vector is a non-aggregated
variable: replicas stay in sync only because each computes the same value from the same weights.
"""

import keras

from lipgan import Constraint, hookimpl

WRAPPED_LAYERS = (keras.layers.Dense, keras.layers.Conv1D, keras.layers.Conv2D, keras.layers.Conv3D)


class SpectralNorm(Constraint):
    """Normalize each Dense/Conv kernel of the critic by its largest singular value."""

    name = "spectral_norm"
    description = (
        "Divide every Dense/Conv kernel by its spectral norm (SN-GAN, Miyato et al. 2018)."
    )

    def __init__(self, power_iterations: int = 1):
        if power_iterations < 1:
            raise ValueError(f"spectral_norm.power_iterations must be >= 1, got {power_iterations}")
        self.power_iterations = int(power_iterations)

    def _wrap(self, layer):
        clone = layer.__class__.from_config(layer.get_config())
        if isinstance(layer, WRAPPED_LAYERS):
            return keras.layers.SpectralNormalization(
                clone, power_iterations=self.power_iterations, name=f"sn_{layer.name}"
            )
        return clone

    def wrap_critic(self, critic):
        wrapped = keras.models.clone_model(critic, clone_function=self._wrap)
        wrapped.build(critic.inputs[0].shape if critic.inputs else None)
        return wrapped


@hookimpl
def lipgan_register_constraints(register):
    register(SpectralNorm)
