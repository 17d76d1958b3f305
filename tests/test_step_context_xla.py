"""StepContext draws are identical eagerly and under XLA (the RNG algorithm is pinned)."""

import numpy as np
import tensorflow as tf

from lipgan import StepContext


def draws():
    ctx = StepContext(seed=3, step=tf.constant(5), phase=1, global_batch_size=8, num_replicas=2,
                      replica_id=1)
    return ctx.uniform([2]), ctx.normal([3])


def test_draws_match_eager_and_xla():
    for eager, compiled in zip(draws(), tf.function(draws, jit_compile=True)()):
        np.testing.assert_array_equal(eager.numpy(), compiled.numpy())
