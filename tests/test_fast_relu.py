"""fast_relu's activation matching: by identity, into nested models, checked on a probe batch.

The pruned critic must be the same function as the original; anything that is not a Keras
(leaky) ReLU is left alone, and a clone that differs is refused (``True``) or not used (``'auto'``).
"""

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from lipgan.core import pruned_relu
from lipgan.core.engine import zeros_for_none
from lipgan.core.errors import ConfigError
from lipgan.core.pruned_relu import (
    PrunedLeakyReLU,
    check_fast_relu,
    maybe_prune,
    prunable_activations,
)
from lipgan_plugins.gradient_penalty import GradientPenalty


def relu(x):
    """A user activation *named* relu that caps at 0.5: it must not be replaced."""
    return tf.minimum(tf.nn.relu(x), 0.5)


def _pruned_layers(model):
    return [
        layer
        for layer in pruned_relu._walk(model)
        if isinstance(layer, PrunedLeakyReLU)
        or getattr(getattr(layer, "activation", None), "__name__", "").startswith("pruned")
    ]


def _scores_and_grads(critic, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        scores = critic(x, training=False)
    return scores.numpy(), tape.gradient(scores, x).numpy()


def test_a_user_function_named_relu_is_left_alone():
    keras.utils.set_random_seed(2)
    critic = keras.Sequential(
        [
            keras.Input(shape=(2,)),
            keras.layers.Dense(16, activation=relu, name="capped"),
            keras.layers.Dense(16, activation="relu", name="keras_relu"),
            keras.layers.ReLU(max_value=0.5, name="capped_layer"),
            keras.layers.Dense(1, kernel_initializer=keras.initializers.Constant(3.0)),
        ]
    )
    assert prunable_activations(critic) == 1  # only Keras' own relu
    pruned = GradientPenalty().wrap_critic(critic)
    assert pruned is not critic
    by_name = {layer.name: layer for layer in pruned.layers}
    assert by_name["capped"].activation is relu
    assert type(by_name["capped_layer"]) is keras.layers.ReLU
    assert by_name["keras_relu"].activation.__name__ == "pruned_relu"
    x = tf.random.stateless_normal([64, 2], seed=[1, 1]) * 4.0
    for a, b in zip(_scores_and_grads(critic, x), _scores_and_grads(pruned, x)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_relus_inside_a_nested_model_are_pruned_and_gradients_match():
    keras.utils.set_random_seed(3)
    inner = keras.Sequential(
        [
            keras.Input(shape=(8,)),
            keras.layers.Dense(8, activation="relu"),
            keras.layers.LeakyReLU(0.1),
        ],
        name="inner",
    )
    inputs = keras.Input(shape=(2,))
    h = keras.layers.Dense(8, activation="leaky_relu")(inputs)
    h = inner(h)
    critic = keras.Model(inputs, keras.layers.Dense(1)(h), name="critic")
    assert prunable_activations(critic) == 3
    fast = GradientPenalty()
    pruned = fast.wrap_critic(critic)
    assert len(_pruned_layers(pruned)) == 3
    real = tf.random.stateless_normal([16, 2], seed=[2, 2])
    fake = tf.random.stateless_normal([16, 2], seed=[3, 3])
    from lipgan.core.constraint import StepContext

    def grads(constraint, model):
        ctx = StepContext(seed=1, step=0, phase=0, global_batch_size=16, num_replicas=1)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(constraint.penalty(model, real, fake, ctx))
        variables = model.trainable_variables
        return [g.numpy() for g in zeros_for_none(tape.gradient(loss, variables), variables)]

    for a, b in zip(grads(GradientPenalty(fast_relu=False), critic), grads(fast, pruned)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)


def test_the_probe_check_refuses_a_clone_that_changes_the_critic(monkeypatch):
    keras.utils.set_random_seed(4)
    critic = keras.Sequential(
        [keras.Input(shape=(2,)), keras.layers.Dense(8), keras.layers.ReLU(), keras.layers.Dense(1)]
    )
    assert maybe_prune(critic, True, "gradient_penalty") is not critic  # sound replacement: used
    faulty = pruned_relu.pruned_leaky_relu
    monkeypatch.setattr(
        pruned_relu, "pruned_leaky_relu", lambda x, negative_slope=0.0: 1.5 * faulty(x, 0.0)
    )
    with pytest.raises(ConfigError, match="not the same function") as error:
        GradientPenalty(fast_relu=True).wrap_critic(critic)
    assert "\n" not in str(error.value) and "fast_relu=False" in str(error.value)
    # 'auto' keeps the original critic instead
    assert GradientPenalty().wrap_critic(critic) is critic


def test_nothing_to_prune_warns_once_when_insisted_and_is_silent_on_auto():
    critic = keras.Sequential(
        [keras.Input(shape=(2,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)],
        name="tanh_critic_for_warning_test",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert GradientPenalty().wrap_critic(critic) is critic
    with pytest.warns(UserWarning, match="no Keras ReLU/LeakyReLU"):
        assert GradientPenalty(fast_relu=True).wrap_critic(critic) is critic
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GradientPenalty(fast_relu=True).wrap_critic(critic)  # once only


def test_fast_relu_values():
    assert check_fast_relu(None, "gp") == "auto" == check_fast_relu("auto", "gp")
    assert check_fast_relu(True, "gp") is True and check_fast_relu(False, "gp") is False
    with pytest.raises(ValueError, match="fast_relu"):
        GradientPenalty(fast_relu="yes")
    assert GradientPenalty(fast_relu=False).wrap_critic(critic := _tiny()) is critic


def _tiny():
    return keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1, activation="relu")])


@pytest.mark.parametrize("name", ["gradient_penalty", "lipschitz_penalty", "dragan", "r1"])
def test_every_double_backprop_penalty_prunes_by_default_with_equal_gradients(name):
    from lipgan.core.constraint import StepContext
    from lipgan.models import mlp_critic
    from lipgan_plugins.dragan import Dragan
    from lipgan_plugins.lipschitz_penalty import LipschitzPenalty
    from lipgan_plugins.r1 import R1

    cls = {
        "gradient_penalty": GradientPenalty,
        "lipschitz_penalty": LipschitzPenalty,
        "dragan": Dragan,
        "r1": R1,
    }[name]
    keras.utils.set_random_seed(6)
    critic = mlp_critic((2,), width=16, depth=2)
    critic.set_weights([3.0 * w for w in critic.get_weights()])  # ‖∇D‖ > 1: WGAN-LP is active
    pruned = cls().wrap_critic(critic)
    assert cls().fast_relu == "auto" and len(_pruned_layers(pruned)) == 2
    assert cls(fast_relu=False).wrap_critic(critic) is critic
    real = tf.random.stateless_normal([16, 2], seed=[4, 4])
    fake = tf.random.stateless_normal([16, 2], seed=[5, 5]) + 2.0

    def grads(model):
        ctx = StepContext(seed=2, step=0, phase=0, global_batch_size=16, num_replicas=1)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(cls().penalty(model, real, fake, ctx))
        variables = model.trainable_variables
        return [g.numpy() for g in zeros_for_none(tape.gradient(loss, variables), variables)]

    standard, fast = grads(critic), grads(pruned)
    assert max(np.abs(g).max() for g in standard) > 0
    for a, b in zip(standard, fast):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)
