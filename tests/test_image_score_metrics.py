"""The scores on FID's network as metrics (``lipgan eval --metric fid --metric is ...``): chosen by
name only, computed on one shared pass of the network per evaluation, each equal to the score
function of ``lipgan.metrics.image_scores`` on the same features; run on the stand-in graph of
``tests/test_inception.py`` (the real one cannot be downloaded here)."""

import functools

import numpy as np
import pytest

from lipgan.core.metric import EvalData
from lipgan.metrics import image_scores, inception, weights
from tests.test_inception import MEMBER, standin_graph_def


@pytest.fixture
def standin(tmp_path, monkeypatch):
    path = tmp_path / "classify_image_graph_def.pb"
    path.write_bytes(standin_graph_def().SerializeToString())
    monkeypatch.setenv(weights.GRAPH_ENV, str(path))
    spec = weights.WeightsSpec(name="x", url="http://127.0.0.1:9/x.tgz", member=MEMBER)
    monkeypatch.setattr(inception, "weights_path", functools.partial(weights.weights_path, spec))
    return str(path)


def images(n, seed, shift=0.0):
    rng = np.random.default_rng(seed)
    return np.clip(rng.uniform(-1, 1, (n, 8, 8, 3)) * 0.5 + shift, -1, 1).astype("float32")


def test_the_four_scores_share_one_pass_and_equal_the_score_functions(standin, monkeypatch):
    from lipgan.core.plugins import load_registry

    registry = load_registry().registry
    data = EvalData(fake=images(40, 1, shift=0.3), real=images(40, 2), data_shape=(8, 8, 3))
    passes = []
    real_features = inception.inception_features

    def counted(x, **kwargs):
        passes.append(len(x))
        return real_features(x, **kwargs)

    monkeypatch.setattr(inception, "inception_features", counted)
    out = {}
    for name in ("fid", "is", "kid", "prdc"):
        metric = registry.get("metric", name)()
        assert not metric.default and metric.applies(data)
        out.update(metric.compute(data))
    assert passes == [40, 40]  # real once, fake once, for all four scores
    real, _ = real_features(data.real)
    fake, logits = real_features(data.fake)
    assert out["fid"] == pytest.approx(image_scores.fid(real, fake))
    assert (out["inception_score"], out["inception_score_std"]) == pytest.approx(
        image_scores.inception_score(logits, splits=10)
    )
    assert out["kid_inception"] == pytest.approx(
        image_scores.kid(real, fake, subset_size=40, seed=0)[0]
    )
    assert {k: out[k] for k in ("precision", "recall", "density", "coverage")} == pytest.approx(
        image_scores.prdc(real, fake, k=5)
    )
    assert out["fid"] > 0 and 1.0 <= out["inception_score"] <= 5.0  # 5 classes in the stand-in


def test_they_do_not_apply_to_points_and_are_not_computed_by_default():
    from lipgan.metrics.evaluation import select_metrics

    points = EvalData(fake=np.zeros((4, 2)), real=np.zeros((4, 2)), data_shape=(2,), toy="ring")
    chosen = {m.name for m in select_metrics(points)}
    assert chosen == {"critic_wasserstein", "toy"}
    image = EvalData(fake=np.zeros((4, 8, 8, 1)), real=np.zeros((4, 8, 8, 1)), data_shape=(8, 8, 1))
    assert not {"fid", "is", "kid", "prdc"} & {m.name for m in select_metrics(image)}
