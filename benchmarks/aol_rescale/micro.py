"""Micro-benchmark: where AOL's extra time per DCGAN critic step goes, old vs new forms.

Each candidate is a tf.function computing forward + backward of ``sum(aol_rescale(kernel) * g)``
for one DCGAN critic kernel; candidates are called in alternation, round after round, and each
keeps its best process-CPU time per call, so load that comes and goes hits all of them alike.
``--critic`` times, the same way, forward + backward of the whole DCGAN critic (32x32x3, dim 64,
batch 64 + 64, gradients for every weight): plain, AOL with the old rescaling, AOL with the new.
Usage: python benchmarks/aol_rescale/micro.py [--rounds N] [--calls N] [--critic]
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import ops  # noqa: E402


def old_conv_gram_channel_matrix(kernel):
    """The form before this change (main at 13f5d82): kh products + a 0/1 diagonal selector."""
    kh, kw, cin, cout = kernel.shape
    rows = ops.transpose(kernel, (1, 2, 0, 3))
    sel = np.zeros((kw, kw, 2 * kw - 1), np.float32)
    for x in range(kw):
        for x2 in range(kw):
            sel[x, x2, x2 - x + kw - 1] = 1.0
    selector = ops.cast(sel.reshape(kw * kw, 2 * kw - 1), kernel.dtype)
    total = None
    for dy in range(kh):
        top = ops.reshape(rows[:, :, : kh - dy, :], (kw * cin, (kh - dy) * cout))
        bottom = ops.reshape(rows[:, :, dy:, :], (kw * cin, (kh - dy) * cout))
        grid = ops.matmul(top, ops.transpose(bottom))
        grid = ops.transpose(ops.reshape(grid, (kw, cin, kw, cin)), (1, 3, 0, 2))
        shifts = ops.reshape(
            ops.matmul(ops.reshape(grid, (cin * cin, kw * kw)), selector), (cin, cin, -1)
        )
        row = ops.sum(ops.abs(shifts), axis=-1)
        row = row if dy == 0 else row + ops.transpose(row)
        total = row if total is None else total + row
    return total


def half_plane_conv_gram_channel_matrix(kernel):
    """One product per shift Δ of a half-plane (dy > 0, or dy = 0 and dx ≥ 0): no selector."""
    kh, kw, cin, cout = kernel.shape
    k = tf.transpose(kernel, (2, 0, 1, 3))  # [in, kh, kw, out]
    total = None
    for dy in range(kh):
        for dx in range(-(kw - 1), kw):
            if dy == 0 and dx < 0:
                continue
            x0, x1 = max(0, -dx), min(kw, kw - dx)
            a = tf.reshape(k[:, : kh - dy, x0:x1, :], (cin, -1))
            b = tf.reshape(k[:, dy:, x0 + dx : x1 + dx, :], (cin, -1))
            term = tf.abs(tf.matmul(a, b, transpose_b=True))
            if dy or dx:
                term = term + tf.transpose(term)
            total = term if total is None else total + term
    return total


def rescale(kernel, sums):
    positive = sums > 0
    scale = tf.where(positive, tf.math.rsqrt(tf.where(positive, sums, 1.0)), 0.0)
    if len(kernel.shape) == 2:
        return kernel * scale[:, None]
    return kernel * scale[None, None, :, None]


def old_aol_rescale(kernel):
    if len(kernel.shape) == 2:
        return rescale(
            kernel, tf.reduce_sum(tf.abs(tf.matmul(kernel, kernel, transpose_b=True)), 1)
        )
    return rescale(kernel, tf.reduce_sum(old_conv_gram_channel_matrix(kernel), 1))


def best_times(fns, rounds, calls):
    """Best process-CPU seconds per call of each function, called in alternation."""
    for fn in fns:
        fn()  # trace
    best = [np.inf] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            t0 = time.process_time()
            for _ in range(calls):
                fn()
            best[i] = min(best[i], (time.process_time() - t0) / calls)
    return best


def critics(rounds, calls):
    import keras

    from lipgan.models.dcgan import dcgan_critic
    from lipgan_plugins.aol import AOL

    keras.utils.set_random_seed(0)
    plain = dcgan_critic((32, 32, 3))
    old = AOL().wrap_critic(plain)
    for layer in old.layers:
        if hasattr(layer, "transform"):
            layer.transform = old_aol_rescale  # the instance's, before issue 26's change
    new = AOL().wrap_critic(plain)
    x = tf.random.stateless_uniform((128, 32, 32, 3), seed=[1, 2], minval=-1.0, maxval=1.0)
    fns = []
    for critic in (plain, old, new):

        @tf.function
        def step(critic=critic):
            with tf.GradientTape() as tape:
                d = critic(x, training=True)
                loss = tf.reduce_mean(d[64:]) - tf.reduce_mean(d[:64])
            return tape.gradient(loss, critic.trainable_variables)

        fns.append(step)
    best = best_times(fns, rounds, calls)
    print("| DCGAN critic fwd+bwd, batch 128 | CPU ms (best) | × plain |\n|---|---|---|")
    for name, t in zip(("plain", "aol, old rescaling", "aol, new rescaling"), best):
        print(f"| {name} | {t * 1e3:.1f} | {t / best[0]:.2f} |")


def main():
    from lipgan.core.reparametrized import conv_gram_channel_matrix, dense_gram_row_sums

    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--calls", type=int, default=5)
    p.add_argument("--critic", action="store_true")
    args = p.parse_args()
    if args.critic:
        critics(args.rounds, args.calls)
        return
    forms = {
        "old": lambda k: rescale(k, tf.reduce_sum(old_conv_gram_channel_matrix(k), 1)),
        "half_plane": lambda k: rescale(
            k, tf.reduce_sum(half_plane_conv_gram_channel_matrix(k), 1)
        ),
        "new": lambda k: rescale(k, tf.reduce_sum(conv_gram_channel_matrix(k), 1)),
    }
    dense_forms = {
        "old": old_aol_rescale,
        "new": lambda k: rescale(k, dense_gram_row_sums(k)),
    }
    rng = np.random.default_rng(0)
    cases = []
    for shape in [(5, 5, 3, 64), (5, 5, 64, 128), (5, 5, 128, 256)]:
        for name, f in forms.items():
            cases.append((shape, name, f))
    for name, f in dense_forms.items():
        cases.append(((4096, 1), name, f))
    fns = []
    for shape, _name, f in cases:
        k = tf.Variable(rng.standard_normal(shape).astype(np.float32) * 0.05)
        g = tf.constant(rng.standard_normal(shape).astype(np.float32))

        @tf.function
        def step(k=k, g=g, f=f):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(f(k) * g)
            return tape.gradient(loss, k)

        fns.append(step)
    best = best_times(fns, args.rounds, args.calls)
    print("| kernel | form | fwd+bwd CPU ms (best) |\n|---|---|---|")
    for (shape, name, _), t in zip(cases, best):
        print(f"| {shape} | {name} | {t * 1e3:.2f} |")


if __name__ == "__main__":
    main()
