"""lipgan.testing: every built-in constraint passes the kit, and the kit catches broken plugins."""

import numpy as np
import pytest
import tensorflow as tf

from lipgan import Constraint, testing
from lipgan.plugins import load_registry
from lipgan.testing import ConstraintConformance

BUILTIN_KWARGS = {
    "gradient_penalty": {"weight": 2.0, "drift": 0.01},
    "weight_clip": {"c": 0.05},
    "lipschitz_penalty": {"weight": 3.0},
    "dragan": {"noise_scale": 0.3},
    "r1": {"gamma": 5.0},
    # The kit's idempotence check starts far from orthonormal: steps enough to converge.
    "bjorck": {"projection": 30},
    "aoc": {"projection": 30},
}


BUILTINS = None


def builtins():
    global BUILTINS
    if BUILTINS is None:
        discovery = load_registry()
        BUILTINS = [
            (e.cls, BUILTIN_KWARGS.get(e.name, {}))
            for e in discovery.registry.entries("constraint")
            if e.source == "built-in"
        ]
    return BUILTINS


def test_every_builtin_constraint_is_checked():
    names = {cls.name for cls, _ in builtins()}
    assert {
        "none",
        "weight_clip",
        "gradient_penalty",
        "spectral_norm",
        "lipschitz_penalty",
        "dragan",
        "r1",
        "bjorck",
        "aol",
        "cayley",
        "soc",
        "sll",
        "cpl",
    } <= names


@pytest.mark.slow
@pytest.mark.parametrize("index", range(14))
def test_builtin_passes_in_process_checks(index):
    cls, kwargs = builtins()[index]
    testing.check_constraint(cls, kwargs, replicas=False)


# -- deliberately broken constraints: the kit must reject each -------------------------------
class Reduced(Constraint):
    name = "reduced"

    def penalty(self, critic, real, fake, ctx):
        return tf.reduce_mean(tf.square(critic(real, training=False)))


class IntegerPenalty(Constraint):
    name = "integer_penalty"

    def penalty(self, critic, real, fake, ctx):
        return tf.ones([tf.shape(real)[0]], tf.int32)


class NanPenalty(Constraint):
    name = "nan_penalty"

    def penalty(self, critic, real, fake, ctx):
        return tf.sqrt(-tf.ones([tf.shape(real)[0]]))


class Shrinking(Constraint):
    name = "shrinking"

    def after_update(self, critic):
        for v in critic.trainable_variables:
            v.assign(v * 0.5)


class EagerOnly(Constraint):
    name = "eager_only"

    def penalty(self, critic, real, fake, ctx):
        return tf.constant(np.ones(int(real.shape[0]) if tf.executing_eagerly() else 1, np.float32))


class NotGinFriendly(Constraint):
    name = "not_gin_friendly"

    def __init__(self, weight, /):
        self.weight = weight


class BadName(Constraint):
    name = "BadName"


class StatefulNoise(Constraint):
    """Uses per-replica stateful RNG: values depend on the replica count."""

    name = "stateful_noise"

    def penalty(self, critic, real, fake, ctx):
        eps = tf.random.uniform([tf.shape(real)[0], 1], seed=1)
        return tf.squeeze(eps, 1) * tf.reduce_sum(tf.square(critic(real + eps, training=False)), 1)


class ReplicaClip(Constraint):
    """Clips to c = 0.01 x replica id: replica 0 zeroes its weights, replica 1 does not."""

    name = "replica_clip_for_tests"

    def after_update(self, critic):
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        c = 0.01 * tf.cast(replica, tf.float32)
        for v in critic.trainable_variables:
            v.assign(tf.clip_by_value(v, -c, c))


@pytest.mark.parametrize(
    "check, cls, match",
    [
        (testing.check_penalty, Reduced, "one value per example"),
        (testing.check_penalty, IntegerPenalty, "dtype int32"),
        (testing.check_penalty, NanPenalty, "non-finite"),
        (testing.check_after_update_idempotent, Shrinking, "not idempotent"),
        (testing.check_compiled, EagerOnly, "tf.function"),
    ],
)
def test_kit_rejects_broken_constraint(check, cls, match):
    with pytest.raises(AssertionError, match=match):
        check(cls())


def test_kit_rejects_positional_only_parameters_and_bad_names():
    with pytest.raises(AssertionError, match="positional-only"):
        testing.check_gin_configurable(NotGinFriendly)
    with pytest.raises(AssertionError, match="snake_case"):
        testing.check_gin_configurable(BadName)


def test_kit_rejects_kwargs_the_constructor_does_not_take():
    with pytest.raises(AssertionError, match="not parameters"):
        testing.check_gin_configurable(builtins()[0][0], {"no_such_option": 1})


def test_replica_check_rejects_locally_defined_classes():
    class Local(Constraint):
        name = "local"

    with pytest.raises(AssertionError, match="module level"):
        testing.check_replica_invariance(Local)


@pytest.mark.slow
def test_builtins_are_replica_invariant_and_broken_constraints_are_caught():
    """One subprocess per replica count for all built-ins plus two broken constraints: per-replica
    stateful RNG in the penalty, and an ``after_update`` that depends on the replica id."""
    specs = [*builtins(), (StatefulNoise, {}), (ReplicaClip, {})]
    probes = testing.replica_probes(specs, (1, 2))
    one, two = probes[1], probes[2]
    for (cls, _), a, b in zip(specs[:-2], one[:-2], two[:-2]):
        testing.assert_same_probe(a, b, cls.__name__)
    assert one[-2]["penalty"] is not None and len(one[-2]["penalty"]) == testing.BATCH
    with pytest.raises(AssertionError, match="differ"):
        testing.assert_same_probe(one[-2], two[-2], "StatefulNoise")
    with pytest.raises(AssertionError, match="after_update leaves the replicas with different"):
        testing.assert_same_probe(one[-1], two[-1], "ReplicaClip")


class TestGradientPenaltyThroughMixin(ConstraintConformance):
    """The pytest mix-in a third-party package uses (replica check covered by the slow test above)."""

    from lipgan_plugins.gradient_penalty import GradientPenalty as constraint_class

    constraint_kwargs = {"weight": 1.0, "one_sided": True}

    def test_replica_invariance(self):  # covered, batched, by the slow test above
        assert self.constraint_class in [cls for cls, _ in builtins()]


def conv_critic(data_shape):
    """A module-level custom critic for image-shaped data, as a plugin author would pass."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=tuple(data_shape)),
            keras.layers.Conv2D(4, 3, strides=2, activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(1),
        ]
    )


class TestMixinWithCustomCriticAndImageShape(ConstraintConformance):
    from lipgan_plugins.r1 import R1 as constraint_class

    data_shape = (8, 8, 3)
    critic_factory = conv_critic  # a plain function: the mix-in must not bind it as a method

    def test_replica_invariance(self):  # the subprocess path is covered by the slow test above
        assert self._critic is conv_critic
