"""Meta-test: every hook is documented (docstring and docs/plugins.md) and exercised by a test."""

import inspect
from pathlib import Path

import pytest

from lipgan.core import constraint, hookspecs, strategy

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "plugins.md"


def hook_names():
    return sorted(
        name
        for name, fn in vars(hookspecs).items()
        if inspect.isfunction(fn) and hasattr(fn, f"{hookspecs.PROJECT_NAME}_spec")
    )


def test_hookspecs_are_found():
    assert {"lipgan_register_constraints", "lipgan_register_strategies"} <= set(hook_names())


@pytest.mark.parametrize("hook", hook_names())
def test_hook_has_docstring_guide_entry_and_test(hook):
    assert (inspect.getdoc(getattr(hookspecs, hook)) or "").strip(), f"{hook} has no docstring"
    assert f"`{hook}(" in GUIDE.read_text(), f"{hook} is not described in docs/plugins.md"
    users = [
        p.name
        for p in (ROOT / "tests").glob("*.py")
        if p.name != Path(__file__).name and hook in p.read_text()
    ]
    assert users, f"no test under tests/ exercises {hook}"


@pytest.mark.parametrize(
    "cls, methods",
    [
        (constraint.Constraint, ["wrap_critic", "penalty", "after_update", "lipschitz_bound"]),
        (strategy.StrategyPlugin, ["create", "is_available", "is_chief"]),
        (
            constraint.StepContext,
            ["uniform", "normal", "global_batch_size", "num_replicas", "step", "ctx.update"],
        ),
    ],
)
def test_contracts_are_documented(cls, methods):
    guide = GUIDE.read_text()
    public = {n for n in vars(cls) if not n.startswith("_") and callable(vars(cls)[n])}
    assert public <= set(methods), (
        f"undocumented public methods of {cls.__name__}: {public - set(methods)}"
    )
    assert cls.__name__ in guide
    for name in methods:
        assert name in guide, f"{cls.__name__}.{name} is not described in docs/plugins.md"
