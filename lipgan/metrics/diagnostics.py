"""Lipschitz diagnostics of a critic, computed on the host between compiled training calls.

A WGAN critic must be (close to) 1-Lipschitz; these functions say how close it is, from three sides:

* :func:`gradient_norm_stats` — ‖∇ₓD(x)‖ at real, generated and interpolated points. WGAN-GP's
  argument is that the optimal critic has norm 1 almost everywhere between the two distributions, so
  the mean, the max and the fraction above 1 show whether a constraint holds where it matters;
* :func:`empirical_lipschitz` — max |D(x) − D(y)| / ‖x − y‖ over sampled pairs: a *lower* bound on
  the true constant that needs no gradients;
* :func:`lipschitz_upper_bound` — a guaranteed *upper* bound on Lip(D) from the layer graph
  (operator norms of dense and convolution layers, the sum rule at residual additions), or None
  for an architecture where lipgan computes no valid bound; usually loose. Its rules and the
  activations' constants are :mod:`lipgan.core.lipschitz`, the one table of Lipschitz facts;
* :func:`layer_gradient_norms` — ‖∂L/∂hₗ‖ for the critic loss L and each layer's activations hₗ, the
  quantity of Fig. 1b of Gulrajani et al. (weight clipping makes it explode or vanish with depth).

Everything here is a pure function of a critic and some points; none of it runs inside the training
step. :class:`Probe` bundles them for ``train(diagnostics_every=N)``.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from lipgan.core.constraint import StepContext
from lipgan.core.lipschitz import lipschitz_upper_bound
from lipgan.core.penalties import interpolate, per_example_gradient_norm


def gradient_norms(critic, x) -> np.ndarray:
    """‖∇ₓD(x)‖₂ per example, as a numpy array."""
    return per_example_gradient_norm(critic, tf.convert_to_tensor(x, tf.float32)).numpy()


def norm_summary(norms: np.ndarray) -> dict:
    """mean, max and fraction above 1 of a set of gradient norms."""
    norms = np.asarray(norms, dtype=np.float64)
    return {
        "mean": float(norms.mean()),
        "max": float(norms.max()),
        "frac_above_1": float((norms > 1.0).mean()),
    }


def interpolates(real, fake, seed: int = 0, step: int = 0) -> tf.Tensor:
    """Random points on the real–fake segments, drawn exactly as the gradient penalty draws them."""
    real = tf.convert_to_tensor(real, tf.float32)
    fake = tf.convert_to_tensor(fake, tf.float32)
    ctx = StepContext(
        seed=seed, step=step, phase=0, global_batch_size=int(real.shape[0]), num_replicas=1
    )
    return interpolate(real, fake, ctx)


def gradient_norm_stats(critic, real, fake, seed: int = 0, step: int = 0) -> dict:
    """Gradient-norm summaries at real, fake and interpolated points: ``{'real/mean': ...}``."""
    points = {"real": real, "fake": fake, "interp": interpolates(real, fake, seed, step)}
    out = {}
    for where, x in points.items():
        for stat, value in norm_summary(gradient_norms(critic, x)).items():
            out[f"{where}/{stat}"] = value
    return out


def _scores(critic, x) -> np.ndarray:
    return np.asarray(
        critic(tf.convert_to_tensor(x, tf.float32), training=False), np.float64
    ).reshape(-1)


def empirical_lipschitz(critic, x, y) -> float:
    """max |D(xᵢ) − D(yᵢ)| / ‖xᵢ − yᵢ‖ over the pairs (xᵢ, yᵢ): a lower bound on Lip(D).

    Pairs with ‖xᵢ − yᵢ‖ = 0 are skipped (they carry no information).
    """
    x = np.asarray(x, np.float32)
    y = np.asarray(y, np.float32)
    if x.shape != y.shape or len(x) == 0:
        raise ValueError(
            f"empirical_lipschitz needs two equal, non-empty sets of points; got {x.shape}, {y.shape}"
        )
    dist = np.sqrt(np.sum(np.square(x.astype(np.float64) - y), axis=tuple(range(1, x.ndim))))
    keep = dist > 0
    if not keep.any():
        raise ValueError("empirical_lipschitz: every pair of points coincides")
    ratio = np.abs(_scores(critic, x) - _scores(critic, y))[keep] / dist[keep]
    return float(ratio.max())


def _sequential_layers(critic) -> list:
    if not isinstance(critic, keras.Sequential) or not critic.layers:
        raise ValueError(
            f"per-layer gradient norms need a keras.Sequential critic; {critic.name!r} is not one"
        )
    return list(critic.layers)


def layer_gradient_norms(critic, real, fake) -> list[float]:
    """‖∂L/∂hₗ‖ for L = mean D(fake) − mean D(real) and the output hₗ of each layer but the last.

    The norm is over the whole batch of activations (real and fake together), as in Fig. 1b of
    Gulrajani et al. The critic's layers are applied in order, so this needs a chain of layers
    (``keras.Sequential``, as every lipgan critic is).
    """
    layers = _sequential_layers(critic)
    real = tf.convert_to_tensor(real, tf.float32)
    fake = tf.convert_to_tensor(fake, tf.float32)
    n = real.shape[0]
    with tf.GradientTape() as tape:
        h = tf.concat([real, fake], axis=0)
        activations = []
        for layer in layers:
            h = layer(h, training=False)
            activations.append(h)
        scores = tf.reshape(tf.cast(h, tf.float32), [-1])
        loss = tf.reduce_mean(scores[n:]) - tf.reduce_mean(scores[:n])
    grads = tape.gradient(loss, activations[:-1])
    return [float(tf.norm(tf.cast(g, tf.float32))) for g in grads]


class Probe:
    """All diagnostics of a run at one step, as a flat ``{'diag/...': float}`` dict.

    Draws its own real batches from the training data (a separate iterator) and fake batches from
    the generator with stateless noise keyed by ``(seed, step)``, so probing does not perturb training.
    On 2-D toy sets with known modes it adds the toy metrics of :mod:`lipgan.metrics.toy`.
    """

    def __init__(
        self,
        wgan,
        data: tf.data.Dataset,
        seed: int,
        dataset_name: str | None = None,
        toy_samples: int = 1024,
    ):
        self.wgan = wgan
        self.seed = seed
        self.batches = iter(data)
        self.toy_set = None
        self.toy_samples = toy_samples
        if dataset_name and wgan.data_shape == (2,):
            from lipgan.data.toy import SAMPLERS

            name = dataset_name.split("/")[-1].split(":")[0]
            self.toy_set = name if name in SAMPLERS else None

    def fake(self, n: int, step: int) -> np.ndarray:
        z = tf.random.stateless_normal(
            [n, *self.wgan.latent_shape], seed=[self.seed, 100_003 + step]
        )
        return np.asarray(self.wgan.generator(z, training=False))

    def __call__(self, step: int) -> dict:
        critic = self.wgan.critic
        real = np.asarray(next(self.batches))
        fake = self.fake(len(real), step)
        out = {
            f"diag/grad_norm/{k}": v
            for k, v in gradient_norm_stats(critic, real, fake, self.seed, step).items()
        }
        out["diag/lipschitz_estimate"] = max(
            empirical_lipschitz(critic, real, fake),
            empirical_lipschitz(critic, real, np.roll(real, 1, axis=0)),
            empirical_lipschitz(critic, fake, np.roll(fake, 1, axis=0)),
        )
        bound = lipschitz_upper_bound(critic)
        if bound is not None:  # no number where no valid bound is known
            out["diag/lipschitz_upper_bound"] = bound
        if isinstance(critic, keras.Sequential):
            for i, norm in enumerate(layer_gradient_norms(critic, real, fake)):
                out[f"diag/layer_grad_norm/{i}"] = norm
        if self.toy_set:
            from lipgan.metrics.toy import toy_metrics

            n = self.toy_samples
            reals = np.concatenate(
                [np.asarray(next(self.batches)) for _ in range(-(-n // len(real)))]
            )[:n]
            out.update(
                {
                    f"toy/{k}": v
                    for k, v in toy_metrics(self.toy_set, self.fake(n, step), reals).items()
                }
            )
        return out
