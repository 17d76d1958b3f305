"""Checks on user-supplied models that catch configurations the WGAN-GP paper advises against.

:func:`warn_if_batch_norm` is called by the engine, once per build, for every constraint.
"""

from __future__ import annotations

import warnings

import keras

from lipgan.core.errors import LipganWarning


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
    """Warn when a WGAN critic contains BatchNormalization; return whether it did.

    The engine (:class:`lipgan.core.engine.WGAN`) calls this once at build time for every
    constraint. Batch norm makes the critic a function of the batch, not of each example, and in
    lipgan three different functions then meet in one step: the critic loss calls the critic once on
    ``concat(real, fake)`` with ``training=True`` (batch statistics of the mixed batch), while the
    penalties and the generator call it with ``training=False`` (moving averages). The gradient
    that is penalized is not the gradient of the function that is trained, and a per-example
    penalty on ‖∇ₓD(x)‖ has no meaning when D(x) depends on the other examples. Measured on a BN
    critic: the critic gap is 1.131 on the concatenated batch, 0.169 with separate
    real and fake calls and 0.890 in inference mode, three answers for one critic (on the fixed
    pair of :mod:`lipgan.testing.testbeds` under GP: 65.2, 0.02 and 4.6 with ‖∇D‖ 2.5, against 3.40
    all three ways and ‖∇D‖ 1.13 with layer norm; ``docs/plugins.md``). Layer norm
    normalizes each example on its own, so it has none of these problems: it is the normalization
    lipgan supports in critics (Gulrajani et al. 2017, Sec. 4, "use layer normalization or none").
    """
    names = [
        layer.name
        for layer in sublayers(critic)
        if isinstance(layer, keras.layers.BatchNormalization)
    ]
    if names:
        warnings.warn(
            f"{constraint_name}: the critic contains BatchNormalization ({', '.join(sorted(names))}); "
            "lipgan trains the critic on concat(real, fake) in training mode but penalizes it and "
            "trains the generator against it in inference mode, so with batch statistics these are "
            "different functions: use LayerNormalization or no normalization in the critic "
            "(Gulrajani et al. 2017, Sec. 4)",
            LipganWarning,
            stacklevel=2,
        )
    return bool(names)


def hint_if_relu(critic, constraint_name: str) -> bool:
    """Hint (one line on stderr, once per constraint and process) that a certified constraint
    wants GroupSort.

    Anil, Lucas & Grosse, "Sorting out Lipschitz function approximation" (ICML 2019), Sec. 3-4:
    a network with norm-constrained weights and ReLU (or leaky ReLU) activations loses gradient
    norm wherever a unit is off, so it cannot keep ‖∇D‖ = 1 and cannot represent the optimal
    WGAN critic even when it is certified 1-Lipschitz; GroupSort (MaxMin) activations preserve
    the gradient norm. ``bjorck`` and ``aol``
    (:class:`lipgan.core.reparametrized.KernelConstruction`) call this at build time. Returns
    whether the critic has such activations.
    """
    from lipgan.core.lipschitz import relu_layer_slope, relu_slope

    relus = sorted(
        layer.name
        for layer in sublayers(critic)
        if relu_layer_slope(layer) is not None
        or relu_slope(getattr(layer, "activation", None)) is not None
    )
    if relus and constraint_name not in _HINTED:
        _HINTED.add(constraint_name)
        warnings.warn(
            f"hint: {constraint_name}: the critic uses (leaky) ReLU ({', '.join(relus[:3])}"
            f"{', ...' if len(relus) > 3 else ''}); with norm-constrained weights ReLU loses "
            "gradient norm, so a MaxMin/GroupSort activation is recommended (e.g. "
            "lipgan.models.mlp_critic(..., activation='maxmin'); Anil et al. 2019, \"Sorting out "
            'Lipschitz function approximation")',
            LipganWarning,
            stacklevel=2,
        )
    return bool(relus)


#: Constraints :func:`hint_if_relu` has hinted about in this process (the hint is given once).
_HINTED: set[str] = set()
