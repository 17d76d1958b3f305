"""Float32 error of ``cayley`` and ``soc`` on the shipped critics' shapes (docs/plugins.md numbers).

    python docs/orthogonal_error.py

Cayley: ``max |QᵀQ − I|`` (the smaller Gram side) of the raw Cayley transform and after the one
Björck step lipgan adds (:func:`lipgan.core.orthogonal.refine`), at initialization and with the raw
weights scaled ×30 (an ill-conditioned ``I + A``); the certified layer bound minus 1.
SOC: ``‖L‖`` (the DFT bound at the layer's size; skipped above 256 channels) against ``norm``, and
the certified ``1 + τ``.
Both: the critic's certified bound (``lipgan audit``'s number) for the toy MLP and the DCGAN
critic (32x32x3, dim 64), and the float32 map against the float64 one on a small conv.
"""

import keras
import numpy as np
import tensorflow as tf

from lipgan.core.orthogonal import cayley, kernel_spectrum
from lipgan.models import dcgan_critic, mlp_critic
from lipgan_plugins.cayley import Cayley, CayleyConv2D, CayleyDense
from lipgan_plugins.soc import SOC, SOCConv2D


def gram_error(q) -> float:
    q = np.asarray(q).astype(np.complex128)
    if q.shape[-2] < q.shape[-1]:
        q = np.conj(np.swapaxes(q, -1, -2))
    gram = np.conj(np.swapaxes(q, -1, -2)) @ q
    return float(np.abs(gram - np.eye(q.shape[-1])).max())


def raw_cayley(layer):
    if isinstance(layer, CayleyDense):
        return cayley(tf.cast(layer.layer.kernel, tf.float32))
    return cayley(kernel_spectrum(tf.cast(layer.kernel, tf.float32), layer.grid_shape[:2]))


def main():
    keras.utils.set_random_seed(0)
    critics = {
        "mlp": mlp_critic((2,), activation="maxmin"),
        "dcgan": dcgan_critic((32, 32, 3), dim=64, activation="maxmin"),
    }
    for name, critic in critics.items():
        for constraint in (Cayley(), SOC()):
            wrapped = constraint.wrap_critic(critic)
            print(
                f"{name} {constraint.name}: certified bound − 1 = "
                f"{constraint.lipschitz_bound(wrapped) - 1:.2e}"
            )
            for layer in wrapped.layers:
                if isinstance(layer, CayleyDense | CayleyConv2D):
                    variables = [v for v in layer.trainable_variables if "bias" not in v.path]
                    rows = []
                    for scale in (1.0, 30.0):
                        saved = [v.numpy() for v in variables]
                        for v in variables:
                            v.assign(v * scale)
                        rows.append(
                            f"×{scale:g}: raw {gram_error(raw_cayley(layer)):.1e}, refined "
                            f"{gram_error(layer.effective_kernel()):.1e}, bound − 1 "
                            f"{layer.operator_norm_bound() - 1:.1e}"
                        )
                        for v, s in zip(variables, saved):
                            v.assign(s)
                    print(f"  {layer.name}: " + "; ".join(rows))
                if isinstance(layer, SOCConv2D):
                    from lipgan.core.lipschitz import conv_operator_norm_bound

                    kernel = np.asarray(layer.effective_kernel(), np.float64)
                    if kernel.shape[-1] > 256:  # a hundred 512x512 complex SVDs: minutes
                        print(f"  {layer.name}: {kernel.shape[-1]} channels, DFT bound skipped")
                        continue
                    ell = conv_operator_norm_bound(kernel, layer.grid_shape[:2], 1)
                    print(
                        f"  {layer.name}: ‖L‖ ≤ {ell:.3f} (norm {layer.norm}), "
                        f"bound − 1 {layer.operator_norm_bound() - 1:.1e}"
                    )
    # float32 arithmetic against float64 on the same effective parameters
    for cls in (CayleyConv2D, SOCConv2D):
        layer = cls(keras.layers.Conv2D(8, 5, strides=2, padding="same", use_bias=False))
        layer.build((None, 8, 8, 8))
        x = np.random.default_rng(0).standard_normal((16, 8, 8, 8))
        y32 = layer.call(tf.constant(x, tf.float32)).numpy()
        y64 = layer.call(tf.constant(x, tf.float64)).numpy()
        err = np.linalg.norm((y32 - y64).reshape(16, -1), axis=1) / np.linalg.norm(
            x.reshape(16, -1), axis=1
        )
        print(f"{cls.__name__} float32 application: max ‖y32 − y64‖/‖x‖ = {err.max():.1e}")


if __name__ == "__main__":
    main()
