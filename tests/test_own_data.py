"""A data set of the user's own in a study: checks, naming, dtype scaling, the held-out split, the
W1 floor and reference rows (lipgan.study.own_data, own_metrics). Fast: no training here; the
study and tune end to end are tests/test_own_data_study.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lipgan.errors import ConfigError
from lipgan.study import StudySpec, own_data, own_metrics
from lipgan.study.references import BOX, BOX_EXPECTED, REAL

MODES = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])


def _points(n=600, seed=0, std=0.05):
    rng = np.random.default_rng(seed)
    return (MODES[rng.integers(0, 4, n)] + std * rng.standard_normal((n, 2))).astype(np.float32)


def _load(data, **kw):
    return own_data.load(data, eval_samples=kw.pop("eval_samples", 2500), **kw)


def test_a_file_is_named_by_stem_and_content_and_split_into_disjoint_rows(tmp_path):
    x = _points()
    np.savez(tmp_path / "pts.npz", x=x, modes=MODES, mode_std=0.05)
    own, arrays = _load(tmp_path / "pts.npz")
    assert own.name.startswith("pts-") and len(own.name) == len("pts-") + 8
    assert (own.kind, own.shape, own.rows, own.modes) == ("vectors", (2,), 600, 4)
    assert own.held_out == 200 == len(arrays["held_out"])  # a third of 600 (< 2500)
    together = np.concatenate([arrays["train"], arrays["held_out"]])
    assert sorted(map(tuple, together)) == sorted(map(tuple, x))  # a split, nothing lost
    again, _ = _load(tmp_path / "pts.npz")
    assert again == own  # the same file, the same name and split
    np.savez(tmp_path / "pts.npz", x=x[::-1].copy(), modes=MODES, mode_std=0.05)
    other, _ = _load(tmp_path / "pts.npz")
    assert other.name != own.name and other.source == own.source  # new content: new cells
    np.save(tmp_path / "pts.npy", x)  # an .npy holds the examples alone: no modes
    assert _load(tmp_path / "pts.npy")[0].modes == 0


@pytest.mark.parametrize(
    ("dtype", "low", "high"),
    [(np.uint8, 0, 255), (np.int8, -128, 127), (np.uint16, 0, 65535), (np.int16, -32768, 32767)],
)
def test_integer_images_map_their_dtypes_range_onto_minus_one_one(tmp_path, dtype, low, high):
    """issue #42 (e): int8 images were scaled as if 0-255, landing in [-2, -0.004]."""
    rng = np.random.default_rng(1)
    x = rng.integers(low, high, size=(300, 8, 8), endpoint=True).astype(dtype)
    x[0, 0, 0], x[0, 0, 1], x[0, 0, 2] = low, high, 0 if low < 0 else low
    np.save(tmp_path / "im.npy", x)
    own, arrays = _load(tmp_path / "im.npy")
    assert (own.kind, own.shape) == ("images", (8, 8, 1))
    rows = np.concatenate([arrays["train"], arrays["held_out"]])
    assert rows.min() == -1.0 and rows.max() == 1.0
    zero = (0 - low) * 2.0 / (high - low) - 1.0
    assert np.isclose(
        np.sort(rows.ravel())[np.searchsorted(np.sort(x.ravel()), 0)], zero, atol=1e-6
    )


def test_the_numpy_tables_agree_with_the_trainers():
    from lipgan import evaluation
    from lipgan.data.adapt import INTEGER_RANGES

    assert {np.dtype(k.as_numpy_dtype): v for k, v in INTEGER_RANGES.items()} == (
        own_data.INTEGER_RANGES
    )
    assert own_data.EXACT_W1_MAX_TERMS == evaluation.EXACT_W1_MAX_TERMS


def _write(tmp_path, name, **arrays):
    path = tmp_path / name
    np.savez(path, **arrays) if name.endswith(".npz") else np.save(path, arrays["x"])
    return path


@pytest.mark.parametrize(
    ("name", "arrays", "expected"),
    [
        ("a.npz", {"a": np.zeros((600, 2)), "b": np.zeros(3)}, "holds arrays a, b; put the"),
        ("a.npy", {"x": np.r_[_points()[:-1], [[np.nan, 0]]]}, "1 non-finite value(s)"),
        ("a.npy", {"x": np.zeros(600)}, "rank 1"),
        ("a.npy", {"x": np.zeros((600, 2, 2, 2, 1))}, "rank 5"),
        ("a.npy", {"x": _points(250)}, "250 rows are too few for a held-out split"),
        ("a.npy", {"x": np.zeros((600, 65))}, "vectors of 65 dimension(s)"),
        ("a.npy", {"x": np.zeros((600, 2), np.int64)}, "integer vectors (int64)"),
        ("a.npy", {"x": np.zeros((600, 2), bool)}, "dtype bool"),
        ("a.npy", {"x": np.zeros((600, 16, 12))}, "images of shape 16x12x1"),
        ("a.npy", {"x": np.zeros((600, 8, 8, 3), np.int32)}, "dtype int32 have no agreed range"),
        ("a.npy", {"x": np.arange(600 * 64.0).reshape(600, 8, 8)}, "float images in [0, 3.84e+04]"),
        ("a.npy", {"x": np.ones((600, 2))}, "every row is the same"),
        ("a.npz", {"x": _points(), "modes": np.zeros((4, 3))}, "expected [K, 2] mode centres"),
        ("a.npz", {"x": _points(), "modes": MODES, "mode_std": -1.0}, "one positive number"),
        ("a.npz", {"x": _points(), "mode_std": 0.1}, "'mode_std' without 'modes'"),
    ],
)
def test_bad_input_is_one_line(tmp_path, name, arrays, expected):
    path = _write(tmp_path, name, **arrays)
    with pytest.raises(ConfigError) as raised:
        _load(path)
    message = str(raised.value)
    assert expected in message and "\n" not in message and str(path) in message


def test_a_missing_file_a_folder_and_a_pickle_are_one_line(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        _load(tmp_path / "nope.npz")
    (tmp_path / "dir.npz").mkdir()
    with pytest.raises(ConfigError, match="not a file"):
        _load(tmp_path / "dir.npz")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}] * 600, dtype=object), allow_pickle=True)
    with pytest.raises(ConfigError, match="not a readable"):
        _load(tmp_path / "obj.npy")
    (tmp_path / "junk.npz").write_text("not a zip")
    with pytest.raises(ConfigError, match="not a readable"):
        _load(tmp_path / "junk.npz")
    np.savez(tmp_path / "cut.npz", x=_points())
    whole = (tmp_path / "cut.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(whole[:100] + bytes(200) + whole[300:])  # a damaged member
    with pytest.raises(ConfigError, match="cut.npz: not"):
        _load(tmp_path / "cut.npz")
    np.savez(tmp_path / "modes.npz", modes=MODES)  # the modes alone are no examples
    with pytest.raises(ConfigError, match="holds arrays modes; put the examples under 'x'"):
        _load(tmp_path / "modes.npz")


def test_a_mode_std_not_given_is_the_mixtures_sigma():
    _, arrays = _load(_points(6000, std=0.05), modes=MODES)
    assert arrays["mode_std"] == pytest.approx(0.05, rel=0.05)


def test_images_are_held_out_no_more_than_an_exact_w1_affords():
    own, _ = _load(np.arange(900 * 3072).reshape(900, 32, 32, 3).astype(np.uint8))
    # n² · 3072 ≤ 2048² · 64: n = 295, so every image W1 is exact and compares with its floor
    assert own.held_out == 295 and own.held_out**2 * 3072 <= own_data.EXACT_W1_MAX_TERMS


def test_the_floor_and_the_reference_rows_against_the_held_out_rows(tmp_path):
    own, arrays = _load(_points(900), modes=MODES, mode_std=0.05)
    own_data.freeze([tmp_path], own, arrays)
    path = own_data.frozen_path(tmp_path, own.name)
    ref = own_metrics.references(path, seeds=2, pairs=4)
    floor = ref["floor"]
    assert floor["n"] == 300 and floor["pairs"] == 4 and floor["se"] > 0
    rows = ref["rows"]
    assert set(rows) == {REAL, BOX, BOX_EXPECTED}
    real, box = rows[REAL]["cells"], rows[BOX]["cells"]
    # real training rows score near the floor (draws of the same kind) and cover every mode;
    # noise on the box is far off
    assert np.mean([c["w1"] for c in real]) < 2 * floor["mean"]
    assert all(c["modes_covered"] == 4 and c["high_quality_fraction"] > 0.95 for c in real)
    assert min(c["w1"] for c in box) > 3 * floor["mean"]
    # the held-out rows against themselves: W1 0 (the metric measures what it says)
    assert own_metrics.sample_metrics(arrays["held_out"], arrays["held_out"], {})["w1"] == 0
    no_modes, plain = _load(_points(900))
    own_data.freeze([tmp_path], no_modes, plain)
    bare = own_metrics.references(own_data.frozen_path(tmp_path, no_modes.name), 1, 2)
    assert set(bare["rows"]) == {REAL, BOX}
    assert "modes_covered" not in bare["rows"][REAL]["cells"][0]
    assert "no mode metrics" in bare["about"] and "wgangp_toy_quick.gin" in bare["about"]


def test_a_changed_file_is_refused_on_resume_in_one_line(tmp_path):
    x = _points()
    np.savez(tmp_path / "pts.npz", x=x)
    spec, _ = own_data.attach(StudySpec(("gradient_penalty",), (), 1), tmp_path / "pts.npz")
    out = tmp_path / "out"
    out.mkdir()
    (out / "spec.json").write_text(json.dumps(spec.as_dict()))
    own_data.check_unchanged(out, spec.data)  # the same file: resumes
    np.savez(tmp_path / "pts.npz", x=x + 1)
    changed, _ = own_data.attach(StudySpec(("gradient_penalty",), (), 1), tmp_path / "pts.npz")
    with pytest.raises(ConfigError, match=r"pts.npz changed since the study in .* began"):
        own_data.check_unchanged(out, changed.data)


def test_a_spec_without_own_data_records_what_it_always_did():
    spec = StudySpec(("gradient_penalty",), ("ring",), 2)
    assert "data" not in spec.as_dict()
    with_data, _ = own_data.attach(spec, _points(), name="mine")
    assert with_data.datasets[0] == "ring" and with_data.datasets[1].startswith("mine-")
    assert with_data.as_dict()["data"][0]["kind"] == "vectors"


def test_python_data_as_the_trainer_takes_it():
    """A tf.data.Dataset (batched, of dicts) gives the same data set as its array."""
    import tensorflow as tf

    x = _points()
    from_array, _ = _load(x)
    ds = tf.data.Dataset.from_tensor_slices({"image": x}).batch(7)
    from_dataset, _ = _load(ds)
    assert from_dataset.sha256 == from_array.sha256 and from_dataset.name.startswith("data-")


def test_the_frozen_copy_trains_on_its_training_rows_only(tmp_path):
    from lipgan.data.array_file import array_file

    own, arrays = _load(_points(), name="pts")
    own_data.freeze([tmp_path, tmp_path / "linked"], own, arrays)
    path = own_data.frozen_path(tmp_path / "linked", own.name)
    factory = array_file(str(path))
    assert factory.settings["name"] == own.name
    batch = next(iter(factory(64, 0)))
    train = {tuple(r) for r in arrays["train"]}
    assert batch.shape == (64, 2) and all(tuple(r) in train for r in np.asarray(batch))


def test_tune_refuses_images_in_one_line():
    from lipgan.study import tune

    spec, _ = own_data.attach(
        tune.TuneSpec(("gradient_penalty",), ()),
        np.random.default_rng(0).uniform(-1, 1, (600, 8, 8)),
    )
    with pytest.raises(ConfigError, match="holds images"):
        spec.check()


def test_the_report_names_the_data_and_claims_no_curve_it_does_not_have(tmp_path):
    from lipgan.study import tables

    own, arrays = _load(_points(900), name="pts")
    own_data.freeze([tmp_path], own, arrays)
    ref = own_metrics.references(own_data.frozen_path(tmp_path, own.name), seeds=1, pairs=2)
    cell = {"dataset": own.name, "constraint": "gp", "seed": 0, "steps": 20}
    result = {"status": "ok", "cell": cell, "metrics": {"w1": 0.5, "critic_wasserstein": 0.4}}
    spec = {"seeds": 1, "eval_samples": 2500, "eval_every": 250}
    md = tables.markdown(spec, [result], references={own.name: ref})
    assert ref["about"] in md and "W1 floor (real vs real, n = 300): **" in md
    assert "(SD over 2 pairs)" in md
    assert "Quality curve" not in md  # own data has none, whatever --eval-every says
    assert "| gp | 0.500 | 0.80 |" in md  # W1, then the critic gap over it
