"""lipgan.metrics.audit: the Jacobian lower bound against closed forms, bounds in order, the CLI
command."""

import json

import keras
import numpy as np
import pytest

from lipgan.core.constraint import Constraint
from lipgan.metrics import audit as audit_module
from lipgan.metrics import diagnostics
from lipgan.metrics.audit import audit, jacobian_norms
from lipgan.models import dcgan_critic, mlp_critic
from lipgan_plugins.aol import AOL
from lipgan_plugins.bjorck import Bjorck
from tests.helpers import invoke
from tests.test_lifecycle import train


def linear_critic(matrix):
    critic = keras.Sequential(
        [keras.Input((matrix.shape[0],)), keras.layers.Dense(matrix.shape[1])]
    )
    critic.layers[0].set_weights([matrix.astype("float32"), np.zeros(matrix.shape[1], "float32")])
    return critic


def test_jacobian_norm_is_the_gradient_norm_or_the_largest_singular_value():
    w = np.array([[3.0], [4.0]])
    np.testing.assert_allclose(jacobian_norms(linear_critic(w), np.ones((300, 2))), 5.0, rtol=1e-6)
    m = np.random.default_rng(0).standard_normal((3, 2))
    got = jacobian_norms(linear_critic(m), np.zeros((4, 3)))  # a 2-output map: its largest σ
    np.testing.assert_allclose(got, np.linalg.norm(m, 2), rtol=1e-5)


def test_a_certifying_constraint_gives_the_upper_bound_and_it_is_above_the_lower():
    keras.utils.set_random_seed(0)
    constraint = Bjorck(iterations=3)  # few iterations: not orthonormal yet, so the bound is < 1
    critic = constraint.wrap_critic(mlp_critic((2,), width=8, depth=2, activation="maxmin"))
    x = np.random.default_rng(1).standard_normal((64, 2))
    report = audit(critic, x, x[::-1] * 2, constraint=constraint)
    assert report["upper_bound_source"] == "constraint:bjorck"
    assert report["lower_bound"] <= report["upper_bound"] <= 1.0 + 1e-5
    assert report["bounds_consistent"] and report["certified_1_lipschitz"]
    assert set(report["lower_bound_by_set"]) == {"real", "fake", "interpolates"}


def test_without_a_certificate_the_audit_falls_back_on_diagnostics(monkeypatch):
    critic = linear_critic(np.array([[3.0], [4.0]]))
    x = np.zeros((8, 2))
    report = audit(critic, x, x + 1, constraint=Constraint())  # the general bound: exact here
    assert report["upper_bound"] == pytest.approx(5.0)
    assert report["upper_bound_source"] == "diagnostics" and report["bounds_consistent"]
    monkeypatch.setattr(diagnostics, "lipschitz_upper_bound", lambda c: None)  # no rule applies
    report = audit(critic, x, x + 1, constraint=Constraint())
    assert report["upper_bound"] is None and report["bounds_consistent"] is None
    assert report["lower_bound"] == pytest.approx(5.0)
    monkeypatch.setattr(diagnostics, "lipschitz_upper_bound", lambda c: 7.5)
    report = audit(critic, x, x + 1, constraint=Constraint())
    assert report["upper_bound"] == 7.5 and report["upper_bound_source"] == "diagnostics"
    assert audit_module.upper_bound(critic, None) == (7.5, "diagnostics")


@pytest.mark.parametrize(
    "constraint,factory,shape",
    [
        (Bjorck(), lambda s: mlp_critic(s, width=16, depth=2, activation="groupsort"), (2,)),
        (AOL(), lambda s: mlp_critic(s, width=16, depth=2), (2,)),
        (AOL(), lambda s: dcgan_critic(s, dim=4), (8, 8, 3)),
        (AOL(), lambda s: dcgan_critic(s, dim=4, activation="maxmin"), (8, 8, 3)),
    ],
)
def test_upper_bound_is_above_lower_bound_for_every_shipped_critic(constraint, factory, shape):
    keras.utils.set_random_seed(2)
    critic = constraint.wrap_critic(factory(shape))
    rng = np.random.default_rng(3)
    real, fake = rng.standard_normal((2, 32, *shape)).astype("float32")
    report = audit(critic, real, fake, constraint=constraint)
    assert report["bounds_consistent"], report
    assert report["upper_bound"] <= 1.0 + 1e-5


@pytest.mark.slow
def test_audit_command_on_a_trained_aol_run(tmp_path):
    run_dir = tmp_path / "run"
    train(
        run_dir, 5, "--bind", "train.constraint=@aol()", "--bind", "mlp_critic.activation='maxmin'"
    )
    result = invoke("audit", str(run_dir), "--points", "64")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{") :])
    assert report["step"] == 5 and report["constraint"] == "aol"
    assert report["points_per_set"] == 64
    assert 0 < report["lower_bound"] <= report["upper_bound"] <= 1.0 + 1e-5


def test_audit_command_on_a_missing_run_is_one_line(tmp_path):
    result = invoke("audit", str(tmp_path / "nope"))
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "no such run directory" in result.output
