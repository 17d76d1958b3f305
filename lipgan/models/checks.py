"""Checks on user-supplied models that catch configurations the WGAN-GP paper advises against."""

from __future__ import annotations

import warnings

import keras


def sublayers(model) -> list:
    """Every layer inside ``model``, recursively (nested models and wrappers such as SpectralNormalization)."""
    found, stack = [], list(getattr(model, "layers", []))
    while stack:
        layer = stack.pop()
        found.append(layer)
        stack.extend(getattr(layer, "layers", []))
        inner = getattr(layer, "layer", None)
        if isinstance(inner, keras.layers.Layer):
            stack.append(inner)
    return found


def warn_if_batch_norm(critic, constraint_name: str) -> bool:
    """Warn when a gradient-penalized critic contains BatchNormalization; return whether it did.

    The penalty is on the gradient of each example's score with respect to that example alone;
    batch norm makes each score depend on the whole batch, so the penalized quantity is not the
    one the theory constrains (Gulrajani et al. 2017, Sec. 4: use layer normalization or none).
    """
    names = [
        layer.name
        for layer in sublayers(critic)
        if isinstance(layer, keras.layers.BatchNormalization)
    ]
    if names:
        warnings.warn(
            f"{constraint_name}: the critic contains BatchNormalization ({', '.join(sorted(names))}); "
            "a gradient penalty assumes per-example critic scores, so use no normalization or "
            "LayerNormalization in the critic (Gulrajani et al. 2017, Sec. 4)",
            UserWarning,
            stacklevel=2,
        )
    return bool(names)
