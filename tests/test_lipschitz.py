"""The one table of Lipschitz facts (lipgan.core.lipschitz) against explicit Jacobians.

The property: on random small nets of every layer kind the bound's walk handles, in both data
formats, ``lipschitz_upper_bound`` is at least the largest singular value of the explicit Jacobian
at random points (the local Lipschitz constant), and a channels_first net gets the same bound as the
channels_last net it equals up to a permutation of coordinates. TensorFlow runs no channels_first
convolution or pooling on a CPU, so a channels_first net's Jacobian is taken on its channels_last
twin (same weights): the two maps differ by permutations of input and output, which leave the
singular values unchanged.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from lipgan.core import lipschitz
from lipgan.core.pruned_relu import PrunedLeakyReLU, prune_activation_hessians
from lipgan.core.reparametrized import chain_lipschitz_bound
from lipgan.models.activations import GroupSort

POINTS = 3  # random points per net at which the Jacobian is taken


def jacobian_norm(model, x: np.ndarray) -> float:
    """Largest σ of ∂vec(model(x))/∂vec(x) over the points ``x`` (one Jacobian per point).

    One eager backward pass (no tracing, no second derivatives): each point is repeated once per
    output coordinate, and copy i's gradient of output coordinate i is row i of its Jacobian.
    """
    points = x.shape[0]
    size = int(np.prod(model(x[:1], training=False).shape[1:]))
    copies = tf.repeat(tf.convert_to_tensor(x, tf.float32), size, axis=0)
    with tf.GradientTape() as tape:
        tape.watch(copies)
        y = tf.reshape(model(copies, training=False), [points * size, size])
        picked = tf.reduce_sum(y * tf.tile(tf.eye(size), [points, 1]))
    jac = tape.gradient(picked, copies).numpy().reshape(points, size, -1).astype(np.float64)
    return max(np.linalg.norm(j, ord=2) for j in jac)


def to_channels_first(shape):
    return (shape[-1], *shape[:-1])


def build(layers, in_shape):
    return keras.Sequential([keras.Input(shape=in_shape), *layers])


def twins(specs, in_shape):
    """(channels_last net, channels_first net with the same weights) from ``specs``, a list of
    (layer class, kwargs); every layer but ReLU is given the data format."""

    def make(data_format):
        return [
            cls(**kw) if cls is keras.layers.ReLU else cls(data_format=data_format, **kw)
            for cls, kw in specs
        ]

    last = build(make("channels_last"), in_shape)
    first = build(make("channels_first"), to_channels_first(in_shape))
    first.set_weights(last.get_weights())
    return last, first


def check_bound(model, bound, rng, in_shape, exact=False):
    x = rng.normal(size=(POINTS, *in_shape)).astype(np.float32)
    norm = jacobian_norm(model, x)
    assert bound is not None
    assert norm <= bound * (1 + 1e-5), (norm, bound)
    if exact:  # the rule is the exact norm of a linear map
        assert bound == pytest.approx(norm, rel=1e-4)


def spatial_nets(rng, rank):
    """(name, specs, exact) for every spatial layer kind, with random settings, at one rank."""
    conv = {1: keras.layers.Conv1D, 2: keras.layers.Conv2D, 3: keras.layers.Conv3D}[rank]
    transposed = {
        1: keras.layers.Conv1DTranspose,
        2: keras.layers.Conv2DTranspose,
        3: keras.layers.Conv3DTranspose,
    }[rank]

    def conv_kwargs(**fixed):
        drawn = dict(
            filters=int(rng.integers(1, 4)),
            kernel_size=int(rng.integers(1, 4)),
            strides=int(rng.integers(1, 3)),
            padding=str(rng.choice(["same", "valid"])),
            activation=str(rng.choice(["linear", "relu", "tanh"])),
        )
        return {**drawn, **fixed}

    nets = [
        ("conv", [(conv, conv_kwargs())], False),
        ("conv_transpose", [(transposed, conv_kwargs())], False),
        (
            "conv_relu_conv",
            [(conv, conv_kwargs()), (keras.layers.ReLU, {}), (conv, conv_kwargs(padding="same"))],
            False,
        ),
    ]
    if rank == 3:
        return nets
    pools = {
        1: (keras.layers.AveragePooling1D, keras.layers.MaxPooling1D),
        2: (keras.layers.AveragePooling2D, keras.layers.MaxPooling2D),
    }[rank]
    global_pools = {
        1: (keras.layers.GlobalAveragePooling1D, keras.layers.GlobalMaxPooling1D),
        2: (keras.layers.GlobalAveragePooling2D, keras.layers.GlobalMaxPooling2D),
    }[rank]
    for pool in pools:
        kw = dict(
            pool_size=int(rng.integers(2, 4)),
            strides=[None, 1, 2][int(rng.integers(0, 3))],
            padding=str(rng.choice(["same", "valid"])),
        )
        nets.append((pool.__name__, [(pool, kw)], False))
    for pool in global_pools:
        exact = pool.__name__.startswith("GlobalAverage")  # 1/sqrt(positions): a mean is exact
        nets.append((pool.__name__, [(pool, {"keepdims": bool(rng.integers(0, 2))})], exact))
    if rank == 2:
        nets += [
            ("zero_padding", [(keras.layers.ZeroPadding2D, {"padding": 1})], True),
            ("cropping", [(keras.layers.Cropping2D, {"cropping": 1})], False),
            ("upsampling", [(keras.layers.UpSampling2D, {"size": 2})], True),
            (
                "conv_then_global_average",
                [
                    (conv, conv_kwargs(padding="same", strides=1)),
                    (keras.layers.GlobalAveragePooling2D, {}),
                ],
                False,
            ),
        ]
    return nets


SPATIAL_SHAPES = {1: (7, 3), 2: (6, 5, 3), 3: (4, 4, 3, 2)}


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_spatial_bounds_hold_in_both_data_formats(rank, seed):
    rng = np.random.default_rng(100 * rank + seed)
    keras.utils.set_random_seed(seed)
    in_shape = SPATIAL_SHAPES[rank]
    for name, specs, exact in spatial_nets(rng, rank):
        last, first = twins(specs, in_shape)
        bound_last = lipschitz.lipschitz_upper_bound(last)
        bound_first = lipschitz.lipschitz_upper_bound(first)
        assert bound_first == pytest.approx(bound_last, rel=1e-9), name
        check_bound(last, bound_last, rng, in_shape, exact=exact)


@pytest.mark.parametrize(
    "layer, in_shape, exact_bound",
    [
        (keras.layers.GlobalAveragePooling2D(data_format="channels_first"), (64, 4, 4), 0.25),
        (keras.layers.GlobalAveragePooling1D(data_format="channels_first"), (32, 4), 0.5),
    ],
    ids=["gap2d", "gap1d"],
)
def test_channels_first_global_average_reads_the_spatial_axes(layer, in_shape, exact_bound):
    # The channel axis was once read as a spatial one: 0.0625 and 0.177, below the true norm.
    assert lipschitz.lipschitz_upper_bound(build([layer], in_shape)) == pytest.approx(exact_bound)


def test_relu_with_a_threshold_is_discontinuous_so_no_bound():
    layer = keras.layers.ReLU(threshold=0.5)
    pair = np.array([[0.5 - 1e-4], [0.5 + 1e-4]], np.float32)
    out = np.asarray(layer(pair))
    assert (out[1] - out[0]) / 2e-4 > 2000  # a jump, not a slope
    net = build([keras.layers.Dense(1), layer], (1,))
    assert lipschitz.lipschitz_upper_bound(net) is None
    assert lipschitz.activation_layer_lipschitz(layer) is None
    assert chain_lipschitz_bound(net) is None
    # with no threshold, a cap or a slope keeps it Lipschitz
    capped = keras.layers.ReLU(max_value=2.0, negative_slope=1.5)
    assert lipschitz.activation_layer_lipschitz(capped) == 1.5


DENSE_IN = (5,)


def dense_nets():
    """(name, make()) for every single-input, non-spatial layer kind the walk handles."""
    act_nets = [
        (
            f"activation_{getattr(fn, '__module__', '')}.{fn.__name__}",
            lambda fn=fn: [
                keras.layers.Dense(6),
                keras.layers.Activation(fn),
                keras.layers.Dense(2),
            ],
        )
        for fn in lipschitz.ACTIVATIONS
    ]
    return act_nets + [
        ("dense_relu", lambda: [keras.layers.Dense(6, activation="relu"), keras.layers.Dense(3)]),
        ("dense_sigmoid", lambda: [keras.layers.Dense(4, activation="sigmoid")]),
        ("relu_slope", lambda: [keras.layers.Dense(6), keras.layers.ReLU(negative_slope=1.5)]),
        ("relu_cap", lambda: [keras.layers.Dense(6), keras.layers.ReLU(max_value=0.3)]),
        ("leaky_steep", lambda: [keras.layers.Dense(6), keras.layers.LeakyReLU(1.7)]),
        ("leaky", lambda: [keras.layers.Dense(6), keras.layers.LeakyReLU(0.2)]),
        ("pruned", lambda: [keras.layers.Dense(6), PrunedLeakyReLU(1.3)]),
        ("groupsort", lambda: [keras.layers.Dense(6), GroupSort(3), keras.layers.Dense(2)]),
        ("maxmin", lambda: [keras.layers.Dense(6), GroupSort(2)]),
        ("dropout", lambda: [keras.layers.Dense(4), keras.layers.Dropout(0.5)]),
        (
            "reshape_permute_flatten",
            lambda: [
                keras.layers.Dense(6),
                keras.layers.Reshape((2, 3)),
                keras.layers.Permute((2, 1)),
                keras.layers.Identity(),
                keras.layers.Flatten(),
            ],
        ),
        (
            "spectral_norm",
            lambda: [
                keras.layers.SpectralNormalization(keras.layers.Dense(4)),
                keras.layers.ReLU(),
            ],
        ),
        ("nested", lambda: [build([keras.layers.Dense(4, activation="tanh")], DENSE_IN)]),
    ]


@pytest.mark.parametrize("seed", [0, 1])
def test_dense_and_activation_bounds_hold(seed):
    rng = np.random.default_rng(seed)
    keras.utils.set_random_seed(seed)
    for name, make in dense_nets():
        net = build(make(), DENSE_IN)
        check_bound(net, lipschitz.lipschitz_upper_bound(net), rng, DENSE_IN)
        # the certified constructions' chain rule reads the same activation constants
        if name.startswith("activation_"):
            assert chain_lipschitz_bound(net) is None  # plain Dense layers are not certified


@pytest.mark.parametrize("merge", ["add", "subtract", "average", "concatenate"])
def test_merge_bounds_hold(merge):
    rng = np.random.default_rng(7)
    keras.utils.set_random_seed(7)
    inputs = keras.Input(shape=DENSE_IN)
    a = keras.layers.Dense(5, activation="relu")(inputs)
    b = keras.layers.Dense(5)(keras.layers.Dense(4, activation="tanh")(inputs))
    layer = {
        "add": keras.layers.Add,
        "subtract": keras.layers.Subtract,
        "average": keras.layers.Average,
        "concatenate": keras.layers.Concatenate,
    }[merge]()
    net = keras.Model(inputs, keras.layers.Dense(2)(layer([a, b])))
    check_bound(net, lipschitz.lipschitz_upper_bound(net), rng, DENSE_IN)


def test_a_linear_chain_bound_is_exact():
    keras.utils.set_random_seed(3)
    net = build([keras.layers.Dense(4)], DENSE_IN)
    check_bound(net, lipschitz.lipschitz_upper_bound(net), np.random.default_rng(3), DENSE_IN, True)


def test_each_activation_constant_is_the_sup_of_its_slope():
    x = np.linspace(-30.0, 30.0, 600_001)
    for fn, fact in lipschitz.ACTIVATIONS.items():
        y = np.asarray(fn(tf.constant(x, tf.float64)), np.float64)
        slope = np.abs(np.diff(y) / np.diff(x)).max()
        assert slope <= fact.lipschitz * (1 + 1e-6), fn
        assert slope >= 0.99 * fact.lipschitz, fn  # tight: no constant is merely safe


def test_pruning_and_the_bound_read_one_table():
    # keras.ops.relu was prunable but had no constant in the diagnostics' own table (bound None).
    net = build([keras.layers.Dense(4, activation=keras.ops.relu), keras.layers.Dense(1)], (3,))
    assert lipschitz.relu_slope(keras.ops.relu) == 0.0
    bound = lipschitz.lipschitz_upper_bound(net)
    assert bound is not None
    pruned = prune_activation_hessians(net)
    assert lipschitz.relu_slope(pruned.layers[0].activation) is None  # not pruned twice
    assert lipschitz.lipschitz_upper_bound(pruned) == pytest.approx(bound)


def test_a_user_function_named_relu_is_unknown():
    def relu(x):
        return 3.0 * tf.nn.relu(x)

    net = build([keras.layers.Dense(4, activation=relu), keras.layers.Dense(1)], (3,))
    assert lipschitz.lipschitz_upper_bound(net) is None
    assert lipschitz.relu_slope(relu) is None
