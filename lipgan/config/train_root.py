"""``train``: the gin root of ``lipgan run``, generated from the Python API's own definitions.

Every ``train.*`` binding is a parameter of the Python API, and its default is defined there
once: the fields of :class:`lipgan.run.spec.RunSpec`, the Trainer's keywords (``train.data``,
``train.constraint``...), the fields of :class:`lipgan.StepConfig` (``train.n_critic``, ``train.seed``...) and of
:class:`lipgan.Intervals` (``train.log_every``...), and :meth:`lipgan.Trainer.fit`'s keywords
(``run_dir``, ``force``, ``callbacks``...). :data:`train`'s signature is built from them, so gin
checks binding names and records defaults (the operative config in ``run.json``) from the same
source, and a new field is a new binding with nothing else to edit. This module does not import
gin (the CLI's gin config is added to the run's record by
:class:`lipgan.config.gin_binding.GinRecord`, a fit callback). Named for the gin root it defines:
"run" is the command and the run dir.
"""

from __future__ import annotations

import dataclasses
import inspect

from lipgan.core.errors import ConfigError
from lipgan.core.step_config import Intervals, StepConfig
from lipgan.core.train_state import TrainState
from lipgan.run.spec import RunSpec
from lipgan.run.trainer import Trainer

#: The one setting of ``train`` that is none of the API's: how many iterations ``lipgan run``
#: trains when a config does not say (``train.steps``; ``fit(steps)`` takes it as an argument).
STEPS = 1000

#: The Trainer keywords that are not ``train`` parameters: the groups whose fields are.
_GROUPS = {"step_config": StepConfig, "intervals": Intervals}


def _parameters() -> dict[str, tuple[str, inspect.Parameter]]:
    """``{train name: (where it goes, parameter)}``, in the order of ``train``'s signature."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    found = []
    for field in dataclasses.fields(RunSpec):
        if field.name not in _GROUPS:
            default = (
                inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default
            )
            parameter = inspect.Parameter(
                field.name, keyword, default=default, annotation=field.type
            )
            found.append((field.name, "trainer", parameter))
    for group, cls in _GROUPS.items():
        for field in dataclasses.fields(cls):
            parameter = inspect.Parameter(field.name, keyword, default=field.default)
            found.append((field.name, group, parameter.replace(annotation=field.type)))
    steps = inspect.Parameter("steps", keyword, default=STEPS, annotation="int")
    found.append(("steps", "fit", steps))
    for name, parameter in inspect.signature(Trainer.fit).parameters.items():
        if name not in ("self", "steps"):
            found.append((name, "fit", parameter.replace(kind=keyword)))
    out = {}
    for name, where, parameter in found:
        if name in out:  # a field named like a keyword: one train.X cannot set both
            raise TypeError(f"train.{name} would set both {out[name][0]} and {where}")
        out[name] = (where, parameter)
    return out


PARAMETERS = _parameters()


def group_settings(settings: dict) -> tuple[RunSpec, dict]:
    """Flat ``train.*`` values -> (the run's :class:`~lipgan.run.spec.RunSpec`, ``fit``'s keywords):
    where gin's values become a spec, once, and are checked.

    Grouped as the Python API groups them: the step's static parameters into a
    :class:`~lipgan.StepConfig`, the host loop's cadence into :class:`~lipgan.Intervals`. Only the
    values given are passed: every default is the API's own.
    """
    unknown = sorted(set(settings) - set(PARAMETERS))
    if unknown:
        raise TypeError(f"train() got unexpected settings: {', '.join(unknown)}")
    for name, (_, parameter) in PARAMETERS.items():
        if parameter.default is inspect.Parameter.empty and name not in settings:
            raise ConfigError(f"train.{name} is not set; bind it in a config (see gin/*.gin)")
    trainer: dict = {}
    groups: dict[str, dict] = {group: {} for group in _GROUPS}
    fit: dict = {}
    for key, value in settings.items():
        where, parameter = PARAMETERS[key]
        if where == "trainer":
            trainer[parameter.name] = value
        elif where == "fit":
            fit[key] = value
        else:
            groups[where][key] = value
    for group, cls in _GROUPS.items():
        trainer[group] = cls(**groups[group])
    return RunSpec(**trainer), fit


def check_settings(settings: dict) -> None:
    """The checks ``lipgan run`` makes of ``train``'s values before it builds anything, for
    ``lipgan config show`` (a config it prints resolved is one ``run`` accepts): the spec's
    (:func:`group_settings`) and the step count's."""
    from lipgan.core.ranges import check_int

    _, fit = group_settings(settings)
    if "steps" in fit:
        check_int(fit["steps"], "steps", minimum=1)


def trainer_from_settings(settings: dict) -> Trainer:
    """A :class:`lipgan.Trainer` from flat ``train.*`` settings (``fit``'s are left out).

    What ``lipgan eval``/``sample`` build from a run's config (without training it).
    """
    return Trainer.from_spec(group_settings(settings)[0])


def train(**settings) -> TrainState:
    """Train a WGAN from flat settings (the gin root ``train``); see :class:`lipgan.Trainer`.

    ``steps`` counts generator updates (each preceded by ``n_critic`` critic updates). Models,
    optimizers and the dataset are *factories* (``@mlp_critic``, ``@critic/Adam``, ``@dataset()``),
    called inside ``strategy.scope()``. The other parameters and their defaults are those of
    :class:`lipgan.Trainer`, :class:`lipgan.StepConfig`, :class:`lipgan.Intervals` and
    :meth:`lipgan.Trainer.fit` (``inspect.signature(train)`` lists them).
    """
    spec, fit = group_settings(settings)
    return Trainer.from_spec(spec).fit(fit.pop("steps", STEPS), **fit)


train.__signature__ = inspect.Signature(
    [parameter.replace(name=name) for name, (_, parameter) in PARAMETERS.items()],
    return_annotation="TrainState",
)
