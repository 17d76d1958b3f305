"""``RunSpec``: the one declaration of what a run is, and the one comparison of two runs.

A :class:`lipgan.Trainer` is built from a :class:`RunSpec` (``Trainer(**keywords)`` is
``Trainer.from_spec(RunSpec(**keywords))``); ``lipgan run`` parses gin into one (the gin root
``train``, whose parameters are the spec's fields: :func:`lipgan.config.train_root.group_settings`); a run dir's ``run.json`` records one
(:meth:`RunSpec.to_json`) and rebuilds one (:meth:`RunSpec.from_json`). Before it, one run was
described field by field in four places (the settings, the rebuild description, the rebuild
reader and the gin root), so a new Trainer keyword meant four edits.

Each field says how it is recorded (its ``kind``, :mod:`lipgan.run.spec_fields`): ``data``, ``model``,
``plugin``, ``strategy`` and ``optimizer`` have their own codecs (:mod:`lipgan.run.settings` for what
is compared, :mod:`lipgan.run.description` for what rebuilds, :mod:`lipgan.run.rebuild` for reading it
back); every other field is a plain value or a frozen dataclass of plain values, recorded, compared
and rebuilt by its name with nothing else to edit. A field marked ``resumable`` may differ when a
run is continued (how long, how often: never what a step computes).

The record keeps format 1 (``settings`` and ``rebuild`` sections) byte for byte: every checkpoint
holds a digest of its run's settings (:func:`settings_digest`), so existing run dirs
resume unchanged and no converter is needed. A record written before a field existed lacks it:
:func:`differences` reads the field's default there.

:func:`differences` is the one comparison (:func:`lipgan.core.compare.differences`): a reused run dir
(:func:`settings_differences`),
a study cell's recorded facts (:mod:`lipgan.study.runner`) and a run dir's stored data
(:mod:`lipgan.run.description`) all go through it. Kept free of TensorFlow: the CLI compares records
before it imports anything heavy.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from lipgan.core.compare import differences
from lipgan.core.errors import ConfigError
from lipgan.core.ranges import check_bool
from lipgan.run import spec_fields
from lipgan.run.spec_fields import field_meta as _field


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """Everything a :class:`lipgan.Trainer` is built from (its keywords, one field each).

    Args:
        data: a TFDS or lipgan dataset name (``"lipgan_toy/8gaussians"``, ``"cifar10"``), a
            ``tf.data.Dataset`` of single examples (lipgan repeats and batches it; shuffle it
            yourself), or a factory ``(global_batch_size, seed) -> tf.data.Dataset`` of global
            batches. A dataset may also be batched (it is unbatched), hold dicts as ``tfds.load``
            returns (see ``data_key``), or be a NumPy array; float64 is cast to float32 and
            integer images map their dtype's range (uint8 [0, 255], int8 [-128, 127]...) onto
            [-1, 1]; int32/int64 are refused (:mod:`lipgan.data.adapt`).
        critic: a ``keras.Model`` or a factory ``data_shape -> keras.Model`` (a factory is called
            inside ``strategy.scope()``; a model made outside it is cloned there when the strategy
            has several replicas). A constraint may wrap the critic (spectral norm; the
            penalties' exact ReLU pruning): the model that trains is ``Trainer.critic``.
        generator: the same for the generator; its ``keras.Input`` shape sets the latent size.
        constraint: a :class:`lipgan.Constraint` (``lipgan.constraints.GradientPenalty()``...).
        strategy: a lipgan strategy (``lipgan.strategies.Mirrored()``), a
            ``tf.distribute.Strategy``, or None for TensorFlow's default.
        critic_optimizer: a Keras optimizer or a factory (default: WGAN-GP's Adam(1e-4, 0.5,
            0.9)); an optimizer is re-made from its config in scope.
        generator_optimizer: the same for the generator.
        step_config: :class:`lipgan.StepConfig` (batch, n_critic, seed, XLA, precision, EMA);
            default ``StepConfig()``.
        intervals: :class:`lipgan.Intervals` (logging, checkpoints, evaluation...); default
            ``Intervals()``.
        checkpoint_input: store the input pipeline's position in each checkpoint; with False a
            resume replays the seeded input stream to the same position instead.
        inception_weights: a local InceptionV3 weights file for FID/KID on image data (lipgan
            downloads nothing); None leaves those metrics out.
        data_key: the feature of dict examples to train on (default ``'image'``, or the only key).

    Raises:
        ConfigError: a setting of the wrong kind or out of range (the dataclasses' own checks,
            :class:`lipgan.StepConfig` and :class:`lipgan.Intervals`, run when they are made).
    """

    data: Any = dataclasses.field(metadata=_field("data"))
    critic: Any = dataclasses.field(metadata=_field("model"))
    generator: Any = dataclasses.field(metadata=_field("model"))
    constraint: Any = dataclasses.field(metadata=_field("plugin"))
    strategy: Any = dataclasses.field(default=None, metadata=_field("strategy"))
    critic_optimizer: Any = dataclasses.field(default=None, metadata=_field("optimizer"))
    generator_optimizer: Any = dataclasses.field(default=None, metadata=_field("optimizer"))
    step_config: Any = dataclasses.field(default=None, metadata=_field(group="StepConfig"))
    intervals: Any = dataclasses.field(
        default=None, metadata=_field(group="Intervals", resumable=True)
    )
    checkpoint_input: bool = dataclasses.field(default=True, metadata=_field(resumable=True))
    inception_weights: str | None = dataclasses.field(default=None, metadata=_field(resumable=True))
    #: Folded into the data (the adapted examples are what is fingerprinted and stored).
    data_key: str | None = dataclasses.field(default=None, metadata=_field(recorded=False))

    def __post_init__(self):
        from lipgan.core.constraint import Constraint

        if not isinstance(self.constraint, Constraint):
            raise ConfigError(
                "train.constraint must be a constraint, e.g. @gradient_penalty(); "
                f"got {self.constraint!r}"
            )
        check_bool(self.checkpoint_input, "checkpoint_input")
        for f in dataclasses.fields(self):
            cls = spec_fields.group_class(f)
            if cls is not None:
                value = getattr(self, f.name)
                if value is None:
                    object.__setattr__(self, f.name, cls())
                elif not isinstance(value, cls):
                    raise ConfigError(
                        f"{f.name} must be a lipgan.{cls.__name__}, not {type(value).__name__}"
                    )

    def replace(self, **changes) -> RunSpec:
        """A copy with ``changes`` (checked as a new spec is)."""
        return dataclasses.replace(self, **changes)

    # -- the record ------------------------------------------------------------------------------
    def settings(self, built) -> dict:
        """What a step computes, as canonical JSON (the record's compared ``settings``).

        Args:
            built: the :class:`lipgan.Trainer` built from this spec (models, optimizers and the
                data's fingerprint are only known once its factories ran).
        """
        from lipgan.run.settings import spec_settings

        return spec_settings(self, built)

    def to_json(self, built, run_dir, steps: int, warn=print) -> dict:
        """What ``run.json`` records of this run: ``{"settings": ..., "rebuild": ...}``.

        Saves a Dataset given as data in ``run_dir/data/`` (:mod:`lipgan.run.description`).
        """
        from lipgan.run.description import describe

        return {
            "settings": self.settings(built),
            "rebuild": describe(run_dir, built, steps, warn),
        }

    @classmethod
    def from_json(cls, record: dict, run_dir, registry, **options) -> tuple[RunSpec, int]:
        """(the spec a run dir's record describes, the steps it trains to): the models from
        their Keras serializations, the plugins from their names and arguments, the data by name
        or from ``data/`` (:func:`lipgan.run.rebuild.spec_arguments`; ``options`` are its own)."""
        from lipgan.run.rebuild import spec_arguments

        arguments, steps = spec_arguments(cls, Path(run_dir), record, registry, **options)
        return cls(**arguments), steps

    def differences(self, other: dict, built) -> list[str]:
        """:func:`settings_differences` of a recorded ``settings`` section and this spec's."""
        return settings_differences(other, self.settings(built), self.plugin_classes())

    def plugin_classes(self) -> dict:
        """``{'constraint': SOC, 'strategy': Default}``: the classes of this spec's plugins (what
        :func:`settings_differences` reads an older record's missing arguments by)."""
        return {"constraint": type(self.constraint), "strategy": type(self.strategy)}


# -- the comparison of two runs' settings ----------------------------------------------------------
#: Top-level settings that may differ when a run is resumed (the fields marked ``resumable``): how
#: long, how often and how verbosely it trains, never what a step computes.
RESUMABLE = tuple(f.name for f in dataclasses.fields(RunSpec) if f.metadata["resumable"])

#: Settings that cannot always be taken (the data fingerprint) or that a plugin may not expose
#: (its constructor arguments): a difference counts only when both records hold one.
OPTIONAL = ("data.fingerprint", "constraint.arguments", "strategy.arguments")


#: lipgan's own classes that a record names by module path and that moved into a subpackage
#: (docs/layout.md): an older record's path read as today's, so its run dir still resumes (every
#: Python run's strategy is ``_GivenStrategy``, tests/fixtures/run_json_e900949.json).
MOVED_MODULES = {"lipgan.factories": "lipgan.core.factories"}


def at_today_paths(value):
    """``value`` (a record's settings) with :data:`MOVED_MODULES`' class paths renamed."""
    if isinstance(value, dict):
        return {key: at_today_paths(v) for key, v in value.items()}
    if isinstance(value, str):
        module, _, name = value.rpartition(".")
        if module in MOVED_MODULES:
            return f"{MOVED_MODULES[module]}.{name}"
    return value


def settings_differences(old: dict, new: dict, plugins: dict | None = None) -> list[str]:
    """The one comparison of two runs' recorded settings (:func:`lipgan.core.compare.differences`):
    :data:`RESUMABLE` ignored, a field a record predates read as its default, the
    :data:`OPTIONAL` ones only where both hold them, a class that moved read at its new path.

    ``plugins`` (``{'constraint': SOC, ...}``, the new run's plugin classes): an argument the
    old record predates is read as the class's ``unrecorded_defaults`` value
    (:func:`unrecorded_settings`), so adding an argument to a plugin does not stop its older
    runs from resuming, and a changed default is still a difference.
    """
    defaults = dict(spec_fields.defaults(RunSpec))
    for field, cls in (plugins or {}).items():
        defaults.update(unrecorded_settings(field, cls, old, new))
    return differences(
        at_today_paths(old),
        at_today_paths(new),
        ignore=RESUMABLE,
        defaults=defaults,
        optional=OPTIONAL,
    )


def unrecorded_settings(field: str, cls, old: dict, new: dict) -> dict:
    """``{'constraint.bound': 'holder'}``: the dotted settings keys of ``cls.unrecorded_defaults``
    (:class:`lipgan.core.named.Named`) when the old record's ``field`` is that plugin; ``{}``
    otherwise. A key sits where the new settings show it (a public attribute, or under
    ``arguments``: :func:`lipgan.run.settings.plugin_settings`)."""
    unrecorded = getattr(cls, "unrecorded_defaults", None) or {}
    if not unrecorded or (old.get(field) or {}).get("class") != getattr(cls, "name", None):
        return {}
    shown = new.get(field) or {}
    return {
        f"{field}.{key}" if key in shown else f"{field}.arguments.{key}": value
        for key, value in unrecorded.items()
    }


def settings_digest(settings: dict) -> str:
    """A hash of the settings that decide what a step computes (:data:`RESUMABLE` left out):
    stored in every checkpoint and compared with the record's when a run resumes, so a record
    that is not the checkpoints' own is found out (:mod:`lipgan.run.checkpoint`)."""
    import hashlib
    import json

    from lipgan.core.compare import flat

    kept = {
        k: v
        for k, v in flat(json.loads(json.dumps(settings, sort_keys=True, default=repr))).items()
        if k.split(".")[0] not in RESUMABLE
    }
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]
