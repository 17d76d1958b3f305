"""Generator EMA (``train.ema_decay``): the average it keeps, its resume, and who samples from it."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import lipgan
from lipgan.constraints import GradientPenalty
from lipgan.core.errors import ConfigError
from lipgan.core.step_config import StepConfig
from tests.helpers import toy_wgan


def _data(wgan, n_batches=64, seed=0):
    rng = np.random.default_rng(seed)
    batches = rng.normal(size=(n_batches, wgan.config.global_batch_size, 2)).astype("float32")
    return wgan.distribute(tf.data.Dataset.from_tensor_slices(batches))


@pytest.mark.parametrize("start", [0, 3])
def test_the_ema_is_the_studiogan_average_of_the_generator_weights(start):
    """After every iteration t: ema = w while t <= ema_start, else d·ema + (1 − d)·w, computed
    here in float64 from the weights read after each single-iteration call."""
    decay = 0.8
    config = StepConfig(global_batch_size=8, n_critic=1, seed=5, jit_compile=False)
    config = StepConfig(**{**vars(config), "ema_decay": decay, "ema_start": start})
    wgan = toy_wgan(GradientPenalty(weight=1.0), config=config)
    iterator = _data(wgan)
    expected = [w.numpy().astype(np.float64) for w in wgan.generator.weights]
    for a, b in zip(wgan.generator_ema.weights, wgan.generator.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())  # the copy starts equal
    for t in range(1, 7):
        wgan.iterate(iterator, 1)
        d = decay if t > start else 0.0
        weights = [w.numpy().astype(np.float64) for w in wgan.generator.weights]
        expected = [d * e + (1 - d) * w for e, w in zip(expected, weights, strict=True)]
    ema = [w.numpy() for w in wgan.generator_ema.weights]
    for e, got in zip(expected, ema, strict=True):
        np.testing.assert_allclose(got, e, rtol=1e-5, atol=1e-6)
    # ... and it is not the generator: the average lags the weights it follows
    assert any(
        not np.allclose(a.numpy(), b.numpy())
        for a, b in zip(wgan.generator_ema.weights, wgan.generator.weights)
    )
    # many iterations per compiled call give the same average as one per call
    other = toy_wgan(GradientPenalty(weight=1.0), config=config)
    other.iterate(_data(other), 6)
    for a, b in zip(other.generator_ema.weights, wgan.generator_ema.weights, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7)


def test_every_decay_keeps_its_own_average_in_the_one_compiled_loop():
    """``train.ema_decay = (0.8, 0.5)``: each copy is its decay's NumPy recurrence over the same
    weights (following them up to ema_start = 2), the first samples, and the loop is traced once
    for both decays and every call."""
    decays, start = (0.8, 0.5), 2
    config = StepConfig(
        global_batch_size=8, n_critic=1, seed=5, jit_compile=False, ema_decay=decays,
        ema_start=start,
    )  # fmt: skip
    wgan = toy_wgan(GradientPenalty(weight=1.0), config=config)
    assert list(wgan.generator_emas) == [0.8, 0.5] and wgan.sampler is wgan.generator_emas[0.8]
    iterator = _data(wgan)
    start_weights = [w.numpy().astype(np.float64) for w in wgan.generator.weights]
    expected = {d: list(start_weights) for d in decays}
    for t in range(1, 6):
        wgan.iterate(iterator, 1)
        weights = [w.numpy().astype(np.float64) for w in wgan.generator.weights]
        for decay in decays:
            d = decay if t > start else 0.0
            expected[decay] = [d * e + (1 - d) * w for e, w in zip(expected[decay], weights)]
    for decay in decays:
        got = [w.numpy() for w in wgan.generator_emas[decay].weights]
        for e, g in zip(expected[decay], got, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    gaps = [
        max(float(np.abs(a.numpy() - b.numpy()).max()) for a, b in
            zip(wgan.generator_emas[0.8].weights, wgan.generator_emas[0.5].weights))
    ]  # fmt: skip
    assert gaps[0] > 1e-6  # two decays, two different averages
    assert wgan._loop.experimental_get_tracing_count() == 1


def test_a_single_decay_in_a_tuple_is_the_float_and_bad_tuples_are_one_line():
    assert StepConfig(ema_decay=(0.9,)).ema_decays == StepConfig(ema_decay=0.9).ema_decays
    assert StepConfig(ema_decay=[0.9, 0.5]).ema_decay == (0.9, 0.5)  # a run record's list
    assert StepConfig().ema_decays == ()
    for bad in [(), (0.9, 0.9), (0.9, 0.0), (0.9, 1.0), (0.9, "0.5")]:
        with pytest.raises(ConfigError, match=r"^train\.ema_decay=.* tuple of distinct") as e:
            StepConfig(ema_decay=bad)
        assert "\n" not in str(e.value)


def test_without_ema_there_is_no_copy_and_the_generator_samples():
    wgan = toy_wgan(GradientPenalty(weight=1.0))
    assert wgan.generator_ema is None and wgan.sampler is wgan.generator


@pytest.mark.parametrize("decay", [1.0, -0.1, "0.9"])
def test_a_bad_decay_is_one_line_that_says_the_range(decay):
    with pytest.raises(ConfigError, match=r"ema_decay=.* must be a number in \[0, 1\)"):
        StepConfig(ema_decay=decay)


def make_trainer(**step):
    def data():
        tf.random.set_seed(7)
        points = np.random.default_rng(0).normal(size=(512, 2)).astype("float32")
        return tf.data.Dataset.from_tensor_slices(points).shuffle(512, seed=1)

    return lipgan.Trainer(
        data=data(),
        critic=lambda shape: lipgan.models.mlp_critic(shape, width=16, depth=1),
        generator=lambda shape: lipgan.models.mlp_generator(shape, width=16, depth=1),
        constraint=GradientPenalty(weight=1.0),
        critic_optimizer=keras.optimizers.Adam(1e-3),
        generator_optimizer=keras.optimizers.Adam(1e-3),
        step_config=lipgan.StepConfig(
            global_batch_size=32, n_critic=1, seed=3, jit_compile=False, **step
        ),
        intervals=lipgan.Intervals(log_every=2, checkpoint_every=3, plot_samples=0),
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "decay, recorded", [(0.9, r"0\.9"), ((0.9, 0.5), r"\[0\.9, 0\.5\]")], ids=["one", "two"]
)
def test_ema_resumes_exactly_and_samples_and_evaluation_use_it(tmp_path, decay, recorded):
    from lipgan.run.progress import Progress

    quiet = Progress(lambda line: None)
    ema = {"ema_decay": decay, "ema_start": 1}
    straight = make_trainer(**ema)
    straight.fit(6, progress=quiet)
    make_trainer(**ema).fit(3, run_dir=tmp_path, progress=quiet)
    resumed = make_trainer(**ema)
    resumed.fit(6, run_dir=tmp_path, progress=quiet)
    assert list(resumed.wgan.generator_emas) == list(straight.wgan.config.ema_decays)
    for d, copy in straight.wgan.generator_emas.items():
        for a, b in zip(copy.weights, resumed.wgan.generator_emas[d].weights, strict=True):
            np.testing.assert_array_equal(a.numpy(), b.numpy())  # bit for bit, as the weights
    if isinstance(decay, tuple):  # the second copy is saved under its decay, and differs
        names = {n.split("/")[0] for n, _ in tf.train.list_variables(str(tmp_path / "checkpoints"))}
        assert {"generator_ema", "generator_ema_0_5"} <= names
        first, second = resumed.wgan.generator_emas.values()
        assert not np.array_equal(first.weights[0].numpy(), second.weights[0].numpy())
    # `lipgan sample` / `lipgan eval` restore the run and sample from its EMA
    reader = make_trainer(**ema)
    assert reader.restore(tmp_path, warn=lambda line: None) == 6
    z = tf.random.stateless_normal([16, *reader.wgan.latent_shape], seed=[3, 7])
    samples = reader.sample(16)
    np.testing.assert_allclose(
        samples, reader.wgan.generator_ema(z, training=False), rtol=1e-6, atol=1e-6
    )
    assert not np.allclose(samples, reader.wgan.generator(z, training=False))
    np.testing.assert_array_equal(samples, resumed.sample(16))
    # a run dir trained with the EMA is not resumed without it (a setting of the step)
    with pytest.raises(
        lipgan.core.errors.RunDirError, match=rf"step_config\.ema_decay: {recorded} -> 0"
    ):
        make_trainer().fit(7, run_dir=tmp_path, progress=quiet)


@pytest.mark.slow
def test_eval_sample_and_audit_take_the_generator_to_use(tmp_path):
    """The CLI reads a Python run dir (run.json describes it) and measures the generator asked
    for: the default is the EMA (the first decay's), ``--generator raw`` the trained generator,
    ``--generator ema:0.5`` the second decay's copy; a decay the run does not keep, a malformed
    value, and ``--generator ema`` on a run without an EMA are refused in one line."""
    import json

    from lipgan.run.progress import Progress
    from tests.helpers import invoke

    quiet = Progress(lambda line: None)
    make_trainer(ema_decay=(0.9, 0.5), ema_start=1).fit(4, run_dir=tmp_path / "ema", progress=quiet)
    drawn = {}
    for which in ("default", "raw", "ema", "ema:0.5", "ema:0.9"):
        out = tmp_path / which
        result = invoke("sample", str(tmp_path / "ema"), "-n", "8", "--generator", which,
                        "--out", str(out))  # fmt: skip
        assert result.exit_code == 0, result.output
        drawn[which] = np.load(f"{out}.npz")["samples"]
    np.testing.assert_array_equal(drawn["default"], drawn["ema"])
    np.testing.assert_array_equal(drawn["ema:0.9"], drawn["ema"])
    assert not np.allclose(drawn["raw"], drawn["ema"])
    assert not np.allclose(drawn["ema:0.5"], drawn["ema"])
    assert not np.allclose(drawn["ema:0.5"], drawn["raw"])
    evaluated = {}
    for which in ("raw", "ema", "ema:0.5"):
        result = invoke("eval", str(tmp_path / "ema"), "--samples", "64", "--generator", which)
        assert result.exit_code == 0, result.output
        evaluated[which] = json.loads(result.output)
        assert evaluated[which]["generator"] == which
    assert evaluated["raw"]["w1"] != evaluated["ema"]["w1"]
    audited = json.loads(invoke("audit", str(tmp_path / "ema"), "--points", "16",
                                "--generator", "raw").output)  # fmt: skip
    assert audited["generator"] == "raw"
    make_trainer().fit(2, run_dir=tmp_path / "plain", progress=quiet)
    result = invoke("sample", str(tmp_path / "plain"), "--generator", "ema",
                    "--out", str(tmp_path / "x"))  # fmt: skip
    assert result.exit_code == 1
    assert result.output.strip() == (
        "Error: this run has no generator EMA (train.ema_decay is 0); use the raw generator"
    )
    assert not (tmp_path / "x.npz").exists()
    refusals = {
        "ema:0.7": "Error: this run keeps no generator EMA at decay 0.7 (train.ema_decay: 0.9, "
        "0.5); use one of those, e.g. --generator ema:0.9",
        "ema:x": "Error: generator must be 'default', 'raw', 'ema' or 'ema:<decay>' with a decay "
        "in (0, 1) (e.g. ema:0.999), not 'ema:x'",
        "ema:1.5": "Error: generator must be 'default', 'raw', 'ema' or 'ema:<decay>' with a "
        "decay in (0, 1) (e.g. ema:0.999), not 'ema:1.5'",
    }
    for which, line in refusals.items():
        result = invoke("sample", str(tmp_path / "ema"), "--generator", which,
                        "--out", str(tmp_path / "y"))  # fmt: skip
        assert (result.exit_code, result.output.strip()) == (1, line)
        assert not (tmp_path / "y.npz").exists()
