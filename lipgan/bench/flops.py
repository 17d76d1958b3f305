"""FLOPs counted from the traced TensorFlow graph (not from a formula), and the analytic bounds.

:func:`graph_flops` traces a function to a concrete graph with static shapes and sums the
``float_ops`` statistics TensorFlow registers per op (``tf.compat.v1.profiler``; MatMul, Conv2D and
their backprops, elementwise ops). Ops inside nested function bodies (``tf.cond`` branches, while
loops) are not visited, so functions are traced for *one* step, without the host loop; a lazy penalty
behind ``tf.cond`` counts as its skipped branch (the harness says so in the record).
"""

from __future__ import annotations

import tensorflow as tf


def graph_flops(fn, *args) -> int | None:
    """Floating-point operations of one call of ``fn(*args)``, or None if the profiler cannot count."""
    concrete = tf.function(fn, autograph=False).get_concrete_function(*args)
    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    try:
        info = tf.compat.v1.profiler.profile(graph=concrete.graph, options=options)
    except Exception:  # noqa: BLE001 - FLOPs are a diagnostic; a missing count must not stop a run
        return None
    return int(info.total_float_ops) or None
