"""Certified 1-Lipschitz critics: GroupSort, Björck and AOL (issue 15)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from lipgan.errors import ConfigError
from lipgan.models import dcgan_critic, mlp_critic
from lipgan.models.activations import GroupSort


@pytest.mark.parametrize("group_size", [2, 3, 6])
def test_groupsort_is_a_permutation_within_groups(group_size):
    x = np.random.default_rng(0).standard_normal((5, 4, 6)).astype("float32")
    y = np.asarray(GroupSort(group_size)(x))
    groups = x.reshape(5, 4, 6 // group_size, group_size)
    np.testing.assert_array_equal(y.reshape(groups.shape), np.sort(groups, axis=-1))
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-6)
    # The Jacobian is a permutation matrix: every row has one 1, so norms are kept exactly.
    xt = tf.constant(x.reshape(20, 6))
    with tf.GradientTape() as tape:
        tape.watch(xt)
        out = GroupSort(group_size)(xt)
    jac = tape.batch_jacobian(out, xt).numpy()
    assert set(np.unique(jac)) <= {0.0, 1.0}
    np.testing.assert_array_equal(jac.sum(axis=1), 1.0)
    np.testing.assert_array_equal(jac.sum(axis=2), 1.0)


def test_groupsort_rejects_indivisible_width():
    with pytest.raises(ConfigError, match="divisible by group_size=4"):
        GroupSort(4)(np.zeros((2, 6), "float32"))


def test_critics_build_with_groupsort_and_keep_their_defaults():
    x = np.random.default_rng(1).standard_normal((3, 2)).astype("float32")
    mlp = mlp_critic((2,), width=8, depth=2, activation="groupsort", group_size=4)
    assert mlp(x).shape == (3, 1)
    assert sum(isinstance(layer, GroupSort) for layer in mlp.layers) == 2
    assert mlp_critic((2,), width=8, activation="maxmin").layers[1].group_size == 2
    default = mlp_critic((2,), width=8, depth=2)
    assert [type(layer) for layer in default.layers] == [keras.layers.Dense] * 3
    img = np.zeros((2, 8, 8, 1), "float32")
    conv = dcgan_critic((8, 8, 1), dim=4, activation="maxmin")
    assert conv(img).shape == (2, 1)
    assert any(isinstance(layer, GroupSort) for layer in conv.layers)
    assert any(
        isinstance(layer, keras.layers.LeakyReLU) for layer in dcgan_critic((8, 8, 1), 4).layers
    )
    with pytest.raises(ConfigError, match="unknown critic activation 'tanhh'"):
        mlp_critic((2,), width=8, activation="tanhh")
