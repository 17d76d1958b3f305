"""SLL/CPL's 1x1 residual layer as two 1x1 convolutions (lipgan's form) or as two matmuls over the
pixels, inside the DCGAN critic: interleaved in one process, so the ratios share the machine's load.

    python benchmarks/residual_1x1/ab.py

Times the wrapped 32x32x3 DCGAN critic's forward pass and weight gradients on a 128-image batch (the
critic step's concat(real, fake) at batch 64), under ``tf.function``, for the plain critic, AOL,
and SLL and CPL in both forms; prints the median of 9 rounds of 5 calls and the ratio to plain.
"""

import time

import keras
import numpy as np
import tensorflow as tf

from lipgan.core import residual_layers
from lipgan.core.residual_layers import ResidualConv
from lipgan.models.dcgan import dcgan_critic
from lipgan_plugins.aol import AOL
from lipgan_plugins.cpl import CPL
from lipgan_plugins.sll import SLL


class MatmulResidualConv(ResidualConv):
    """The same map with the 1x1 convolutions as matmuls on [b·h·w, c] rows."""

    def call(self, inputs):
        scale = tf.cast(self.scales(), inputs.dtype)
        kernel = tf.cast(self.kernel, inputs.dtype)[0, 0]
        rows = tf.reshape(inputs, [-1, inputs.shape[-1]])
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(rows, kernel), tf.cast(self.bias, inputs.dtype)))
        out = rows - tf.matmul(h, kernel * scale, transpose_b=True)
        return self._finish(tf.reshape(out, tf.shape(inputs)))


def gradient_step(critic):
    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(critic(x, training=True))
        return tape.gradient(loss, critic.trainable_variables)

    return step


def main():
    shape = (32, 32, 3)
    x = tf.constant(np.random.default_rng(0).normal(size=(128, *shape)), tf.float32)
    keras.utils.set_random_seed(0)
    steps = {"none": gradient_step(dcgan_critic(shape))}
    steps["aol"] = gradient_step(AOL().wrap_critic(dcgan_critic(shape)))
    for name, construction in (("sll", SLL), ("cpl", CPL)):
        for form, cls in (("conv", ResidualConv), ("matmul", MatmulResidualConv)):
            residual_layers.ResidualConv = cls  # what ResidualConstruction builds
            steps[f"{name} {form}"] = gradient_step(construction().wrap_critic(dcgan_critic(shape)))
    residual_layers.ResidualConv = ResidualConv
    for step in steps.values():
        step(x)
    times = {k: [] for k in steps}
    for _ in range(9):
        for k, step in steps.items():
            start = time.perf_counter()
            for _ in range(5):
                grads = step(x)
            grads[0].numpy()
            times[k].append((time.perf_counter() - start) / 5)
    plain = np.median(times["none"])
    print("| critic | ms per call (median of 9) | × plain |\n|---|---|---|")
    for k, v in times.items():
        print(f"| {k} | {np.median(v) * 1e3:.1f} | {np.median(v) / plain:.2f} |")


if __name__ == "__main__":
    main()
