"""A study's image scores: ``lipgan study --metric``, each image row's scores beside the
real-vs-real floor and uniform noise, refusals before training, and the CIFAR-10 study's path
end to end on ``lipgan_shapes`` with a stand-in of FID's network (the real graph cannot be
downloaded here; ``tests/test_inception.py`` checks the network's plumbing on the same stand-in).
"""

import functools
import json
import math

import pytest

from lipgan.core.metric import Metric
from lipgan.metrics import inception, weights
from lipgan.study import summary, tables
from lipgan.study.image_references import NOISE, REAL, WHAT
from tests.helpers import invoke
from tests.test_inception import MEMBER, standin_graph_def

SCORES = ("fid", "inception_score", "kid_inception", "precision", "recall", "density", "coverage")


def full_size_standin(path):
    """The stand-in graph padded (an unused constant) to the real file's exact size, the one
    check a local copy of the graph must pass, so that a study's cell processes accept it."""
    import tensorflow as tf

    graph_def = standin_graph_def()
    node = graph_def.node.add(name="lipgan_test_padding", op="Const")
    node.attr["dtype"].type = tf.string.as_datatype_enum
    tensor = node.attr["value"].tensor
    tensor.dtype = tf.string.as_datatype_enum
    tensor.string_val.append(b"")
    target = weights.INCEPTION_2015.member_size
    while graph_def.ByteSize() != target:
        tensor.string_val[0] = b"\0" * (len(tensor.string_val[0]) + target - graph_def.ByteSize())
    path.write_bytes(graph_def.SerializeToString())
    return path


def _result(constraint, seed, **metrics):
    cell = {"dataset": "cifar10", "constraint": constraint, "seed": seed, "steps": 10}
    cell.update(eval_samples=100, bindings=[])
    return {"status": "ok", "cell": cell, "metrics": metrics, "seconds_per_iteration": 0.5}


def _scores(fid, **more):
    values = dict(zip(SCORES, (fid, 2.0, 0.01, 0.5, 0.4, 0.9, 0.6), strict=True))
    return {**values, "inception_score_std": 0.1, "kid_inception_std": 0.001, **more}


def test_image_rows_print_every_score_beside_the_floor_and_noise_rows():
    results = [
        _result("gradient_penalty", 0, **_scores(30.0, my_score=1.0)),
        _result("gradient_penalty", 1, **_scores(50.0, my_score=3.0)),
        _result("aol", 0, **_scores(80.0, my_score=2.0)),
    ]
    references = {
        "cifar10": {
            "image": True,
            "metrics": ["fid", "is", "kid", "prdc", "my_metric"],
            "floor": None,
            "rows": {
                REAL: {"what": WHAT[REAL], "cells": [_scores(2.0, my_score=0.0)] * 2},
                NOISE: {"what": WHAT[NOISE], "cells": [_scores(400.0, my_score=9.0)] * 2},
            },
        }
    }
    spec = {"steps": 10, "seeds": 2, "eval_samples": 100}
    md = tables.markdown(spec, results, references=references)
    head = next(line for line in md.splitlines() if line.startswith("| constraint |"))
    for title in ("FID", "IS", "KID", "precision", "recall", "density", "coverage", "my_score"):
        assert f" {title} |" in head, title
    assert "_std" not in head  # a run's own spread is not a column: rows show the seeds'
    row = next(line for line in md.splitlines() if line.startswith("| gradient_penalty |"))
    column = head.split(" | ").index("FID")
    assert row.split(" | ")[column] == "40.00 ± 14.14"  # mean ± SD of 30 and 50
    assert row.split(" | ")[head.split(" | ").index("my_score")] == "2.0000 ± 1.4142"
    floor = next(line for line in md.splitlines() if line.startswith(f"| *{REAL}"))
    noise = next(line for line in md.splitlines() if line.startswith(f"| *{NOISE}"))
    assert floor.split(" | ")[column] == "2.00 ± 0.00" and noise.split(" | ")[column].startswith(
        "400.00"
    )
    assert "real-vs-real floor" in md and "`fid`, `is`, `kid`, `prdc`" in md
    assert "W1 floor" not in md
    stats = summary.summarize(results, extra=summary.extra_columns(references))["cifar10"]
    assert stats["aol"]["stats"]["my_score"][0] == 2.0
    assert stats["gradient_penalty"]["stats"]["fid"][:2] == pytest.approx((40.0, 10.0))


def test_an_unknown_metric_is_refused_in_one_line_listing_the_registered_ones(tmp_path):
    out = tmp_path / "never"
    result = invoke("study", "--dataset", "digits", "--metric", "nosuch", "--out", str(out))
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "unknown metric 'nosuch'" in lines[0]
    assert all(name in lines[0] for name in ("digits", "fid", "is", "kid", "prdc"))
    assert not out.exists()
    toys = invoke("study", "--dataset", "ring", "--metric", "fid", "--out", str(out))
    assert toys.exit_code == 1 and "has none" in toys.output and not out.exists()
    points = invoke("study", "--dataset", "digits", "--metric", "toy", "--out", str(out))
    assert points.exit_code == 1 and "'toy' does not apply" in points.output


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No graph here, none in the cache, and its URL a closed loopback port."""
    monkeypatch.delenv(weights.GRAPH_ENV, raising=False)
    monkeypatch.setenv(weights.CACHE_ENV, str(tmp_path / "cache"))
    spec = weights.WeightsSpec(
        name=weights.INCEPTION_2015.name, url="http://127.0.0.1:9/x.tgz", member=MEMBER
    )
    monkeypatch.setattr(inception, "weights_path", functools.partial(weights.weights_path, spec))
    return weights.cached_path(spec)


@pytest.mark.parametrize("metric", [(), ("--metric", "fid")])
def test_missing_weights_are_refused_in_one_line_before_training(tmp_path, offline, metric):
    out = tmp_path / "never"
    dataset = "cifar10" if not metric else "digits"  # cifar10's default scores need the graph
    result = invoke("study", "--dataset", dataset, *metric, "--seeds", "1", "--out", str(out))
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and MEMBER in lines[0] and str(offline) in lines[0], lines
    assert not out.exists()  # nothing trained, nothing written


@pytest.mark.heavy
@pytest.mark.slow
def test_the_cifar10_study_path_end_to_end_on_shapes_with_a_standin_network(tmp_path, monkeypatch):
    """``studies/cifar10/run.sh``'s command, shrunk: one of its constraints, 2 iterations of a
    width-4 ResNet on ``lipgan_shapes``, 64 samples scored on the stand-in network."""
    monkeypatch.setenv(weights.GRAPH_ENV, str(full_size_standin(tmp_path / MEMBER)))
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "data"))
    out = tmp_path / "study"
    bindings = [
        "dataset.name='lipgan_shapes'",
        "resnet_critic.dim=4",
        "resnet_generator.dim=4",
        "train.global_batch_size=8",
        "train.n_critic=1",
        "train.steps_per_execution=1",
        "train.jit_compile=False",
    ]
    args = ["study", "--quick", "--dataset", "cifar10", "--seeds", "1", "--steps", "2"]
    args += ["--constraint", "bjorck", "--eval-samples", "64"]
    args += ["--out", str(out), "--quiet", "--jobs", "1"]
    for binding in bindings:
        args += ["--bind", binding]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "study.json").read_text())
    for cell in report["cells"]:
        assert cell["status"] == "ok", cell.get("error")
        assert set(SCORES) <= set(cell["metrics"]), cell["metrics"]
        assert all(math.isfinite(cell["metrics"][k]) for k in SCORES)
    rows = report["references"]["cifar10"]["rows"]
    floor, noise = rows[REAL]["cells"][0], rows[NOISE]["cells"][0]
    assert set(SCORES) <= set(floor) and set(SCORES) <= set(noise)
    assert floor["n"] == noise["n"] == 64  # 2 x 64 <= the 2,000 shapes: disjoint samples of n
    assert 0 < floor["fid"] < noise["fid"]  # a second real sample is nearer than noise
    md = (out / "study.md").read_text()
    assert "| FID |" in md and f"| *{REAL}" in md and f"| *{NOISE}" in md


@pytest.mark.parametrize("n, half", [(4, 4), (8, 5)])
def test_the_floor_compares_disjoint_real_samples_halving_a_set_smaller_than_2n(
    monkeypatch, n, half
):
    import numpy as np
    import tensorflow as tf

    from lipgan.study import image_references as refs

    examples = np.arange(10, dtype=np.float32).reshape(10, 1, 1, 1)  # ten distinct examples

    def factory(batch, seed):
        data = tf.data.Dataset.from_tensor_slices(examples).shuffle(10, seed=seed).repeat()
        return data.batch(batch, drop_remainder=True)

    data = {"factory": factory, "batch_size": 2, "inception_weights": None}
    monkeypatch.setattr("lipgan.data.pipeline.num_examples", lambda f: len(examples))
    seen = []

    class Recording(Metric):  # scores against the cells' real sample, as FID does
        name = "fid"

        def compute(self, data):
            seen.append((data.fake, data.real))
            return {"fid": 1.0}

    monkeypatch.setattr(
        "lipgan.metrics.evaluation.select_metrics", lambda evaluation, names: [Recording()]
    )
    out = refs.compute("cifar10", n, 1, ("fid",), data_of=lambda dataset, seed, bindings: data)
    (again, first), (noise, real) = seen
    assert len(again) == len(first) == half and not set(again.ravel()) & set(first.ravel())
    assert len(real) == n and noise.shape == real.shape and np.abs(noise).max() <= 1
    assert out["rows"][refs.REAL]["cells"] == [{"fid": 1.0, "n": half}]
    assert (f"n = {half} each" in out["rows"][refs.REAL]["what"]) == (half < n)


def test_a_metric_with_a_reference_of_its_own_floors_on_examples_outside_it(monkeypatch):
    """The digits FD compares every sample with all the training digits, so its floor must score
    real digits outside them (the test split), not a half of the very reference; the row says
    which sample each metric scored."""
    import numpy as np
    import tensorflow as tf

    from lipgan.study import image_references as refs

    examples = np.arange(10, dtype=np.float32).reshape(10, 1, 1, 1)
    outside = np.full((3, 1, 1, 1), 99.0, np.float32)
    data = {
        "factory": lambda batch, seed: (
            tf.data.Dataset.from_tensor_slices(examples).repeat().batch(batch, drop_remainder=True)
        ),
        "batch_size": 2,
        "inception_weights": None,
    }
    monkeypatch.setattr("lipgan.data.pipeline.num_examples", lambda f: len(examples))
    seen = {}

    class Shared(Metric):
        name = "fid"

        def compute(self, data):
            seen.setdefault(self.name, []).append(data.fake)
            return {"fid": float(len(data.fake))}

    class Own(Shared):
        name = "own"

        def floor_sample(self, data):
            return outside, "three examples outside the reference"

        def compute(self, data):
            seen.setdefault(self.name, []).append(data.fake)
            return {"own_fd": float(data.fake.mean())}

    monkeypatch.setattr(
        "lipgan.metrics.evaluation.select_metrics", lambda evaluation, names: [Shared(), Own()]
    )
    out = refs.compute("cifar10", 4, 2, ("fid", "own"), data_of=lambda *a: data)
    real = out["rows"][refs.REAL]
    assert real["cells"][0] == {"fid": 4.0, "own_fd": 99.0, "n": 4, "n_by_metric": {"own": 3}}
    assert len(real["cells"]) == 2 and real["what"] == (
        f"own: three examples outside the reference (n = 3); fid: {refs.WHAT[refs.REAL]}"
    )
    noise = out["rows"][refs.NOISE]["cells"][0]
    assert noise["n"] == 4 and "n_by_metric" not in noise  # noise is scored as a cell is
    assert [len(f) for f in seen["own"]] == [3, 4, 3, 4]  # floor sample, noise; per seed


def test_the_digits_floor_sample_is_the_test_split_disjoint_from_the_reference():
    import numpy as np

    from lipgan.core.metric import EvalData
    from lipgan.metrics.images import real_digits
    from lipgan_plugins.metrics import DigitsMetrics

    sample, what = DigitsMetrics().floor_sample(EvalData(np.zeros((1, 2)), np.zeros((1, 2))))
    train, _ = real_digits("train")
    assert sample.shape[1:] == train.shape[1:] and len(sample) == 300
    assert not {x.tobytes() for x in sample} & {x.tobytes() for x in train}
    assert what == "the 300 held-out test digits against all 1,497 training digits"


def test_a_cells_evaluation_is_the_default_metrics_and_the_studys_image_scores():
    import numpy as np

    from lipgan.core.errors import ConfigError
    from lipgan.core.metric import EvalData
    from lipgan.metrics.evaluation import select_metrics

    digits = EvalData(np.zeros((4, 16, 16, 1)), np.zeros((4, 16, 16, 1)), data_shape=(16, 16, 1))
    digits.digits = True
    names = [m.name for m in select_metrics(digits, extra=("digits", "fid", "kid"))]
    assert names == ["critic_wasserstein", "digits", "fid", "kid"]  # digits once, defaults first
    points = EvalData(np.zeros((4, 2)), np.zeros((4, 2)), data_shape=(2,), toy="ring")
    with pytest.raises(ConfigError, match="'fid' does not apply"):
        select_metrics(points, extra=("fid",))


def test_lipgan_shapes_draws_the_shape_its_label_names_the_same_everywhere():
    import numpy as np

    from lipgan.data.shapes import SHAPES, shape_images

    images, labels = shape_images(300, seed=0)
    again, _ = shape_images(300, seed=0)
    assert images.shape == (300, 32, 32, 3) and images.dtype == np.uint8
    assert np.array_equal(images, again) and set(labels) == set(range(len(SHAPES)))
    # foreground (pixels unlike the corner's background) per shape: a ring has a hole
    foreground = (images != images[:, :1, :1]).any(-1).mean((1, 2))
    rings, discs = foreground[labels == 2], foreground[labels == 0]
    assert 0 < rings.mean() < discs.mean()


@pytest.mark.slow
def test_reference_rows_computed_at_the_gin_edge_fail_in_one_line_naming_the_data_set():
    """The study reads no gin: the image reference rows are built in the gin edge's child process
    (``python -m lipgan.config.cells --references``); a binding the data set's gin refuses there
    comes back as one line, not a child's traceback."""
    from lipgan.core.errors import LipganError
    from lipgan.study import image_references as refs

    with pytest.raises(LipganError) as caught:
        refs.in_child("cifar10", 4, 1, ("fid",), bindings=("train.no_such_keyword = 1",))
    message = str(caught.value)
    assert message.startswith("the reference rows of cifar10 could not be computed: ")
    assert "no_such_keyword" in message and "\n" not in message
