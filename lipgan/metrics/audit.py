"""The Lipschitz audit: how far a trained critic is from 1-Lipschitz, bounded from both sides.

**Lower bound** (empirical, always available): the largest spectral norm of the per-example Jacobian
``∂D(x)/∂x`` (``tape.batch_jacobian``; for a scalar critic the gradient norm) over a batch of real,
fake and real–fake interpolated points. Any critic is at least this Lipschitz.

**Upper bound** (certified, when something certifies one): first the constraint's own
:meth:`lipgan.Constraint.lipschitz_bound` (``bjorck`` and ``aol`` compute it from their effective
kernels), else the general ``lipgan.metrics.diagnostics.lipschitz_upper_bound(critic)``, else None
(no valid bound known for this architecture). A critic is certified 1-Lipschitz (up to float
rounding) when the upper bound is <= 1; ``upper >= lower`` always holds for a valid bound, so a
violation means a bug in the bound.

Used by ``lipgan audit RUN_DIR`` (JSON on stdout) and callable on a :class:`lipgan.Trainer`, a
:class:`lipgan.core.engine.WGAN` or a bare critic (then pass ``constraint=``).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from lipgan.metrics import diagnostics

#: Points per batch_jacobian call (memory grows with points × input size × outputs).
CHUNK = 256


def _critic_and_constraint(obj, constraint):
    wgan = getattr(obj, "wgan", obj)  # a Trainer holds its WGAN
    critic = getattr(wgan, "critic", wgan)
    return critic, constraint if constraint is not None else getattr(wgan, "constraint", None)


def jacobian_norms(critic, x) -> np.ndarray:
    """Spectral norm of ``∂D(x_i)/∂x_i`` for each example (the gradient norm for a scalar critic)."""
    out = []
    for start in range(0, len(x), CHUNK):
        chunk = tf.convert_to_tensor(x[start : start + CHUNK], tf.float32)
        with tf.GradientTape() as tape:
            tape.watch(chunk)
            scores = tf.reshape(
                tf.cast(critic(chunk, training=False), tf.float32), [len(chunk), -1]
            )
        jac = tape.batch_jacobian(scores, chunk).numpy().reshape(len(chunk), scores.shape[1], -1)
        if jac.shape[1] == 1:
            out.append(np.linalg.norm(jac[:, 0, :], axis=1))
        else:
            out.append(np.linalg.norm(jac.astype(np.float64), ord=2, axis=(1, 2)))
    return np.concatenate(out)


def upper_bound(critic, constraint) -> tuple[float | None, str | None]:
    """(certified upper bound on the critic's Lipschitz constant, what gave it) or (None, None)."""
    certify = getattr(constraint, "lipschitz_bound", None)
    bound = certify(critic) if certify is not None else None
    if bound is not None:
        return float(bound), f"constraint:{constraint.name}"
    # The general bound (valid-bound rules for chains, residual adds and convolutions; None where
    # no rule applies) is the one the training diagnostics report.
    bound = diagnostics.lipschitz_upper_bound(critic)
    return (None, None) if bound is None else (float(bound), "diagnostics")


def audit(trainer_or_wgan, real, fake, *, seed: int = 0, constraint=None) -> dict:
    """Lower and upper bounds on the critic's Lipschitz constant (see the module docstring).

    ``real`` and ``fake`` are arrays of examples; the first ``min(len(real), len(fake))`` of each
    are used, with one interpolate per pair (ε ~ U[0, 1] from ``seed``).
    """
    critic, constraint = _critic_and_constraint(trainer_or_wgan, constraint)
    n = min(len(real), len(fake))
    real = np.asarray(real[:n], np.float32)
    fake = np.asarray(fake[:n], np.float32)
    eps = np.random.default_rng(seed).uniform(size=(n,) + (1,) * (real.ndim - 1))
    points = {
        "real": real,
        "fake": fake,
        "interpolates": real + eps.astype(np.float32) * (fake - real),
    }
    norms = {name: jacobian_norms(critic, x) for name, x in points.items()}
    lower = max(float(v.max()) for v in norms.values())
    upper, source = upper_bound(critic, constraint)
    return {
        "constraint": getattr(constraint, "name", None),
        "points_per_set": n,
        "lower_bound": lower,
        "lower_bound_by_set": {k: float(v.max()) for k, v in norms.items()},
        "mean_jacobian_norm_by_set": {k: float(v.mean()) for k, v in norms.items()},
        "upper_bound": upper,
        "upper_bound_source": source,
        # A valid bound is never below an attained Jacobian norm (float32 rounding aside).
        "bounds_consistent": None if upper is None else bool(upper >= lower * (1 - 1e-5)),
        "certified_1_lipschitz": None if upper is None else bool(upper <= 1.0 + 1e-5),
    }
