"""How a :class:`lipgan.run.spec.RunSpec` field is recorded: its kind, whether it may change on resume,
and the JSON of a plain-value field (a value, or a frozen dataclass of values such as
:class:`lipgan.StepConfig`).

A leaf below :mod:`lipgan.run.settings`, :mod:`lipgan.run.description` and :mod:`lipgan.run.rebuild` (the
codecs of the other kinds), which read the fields of the spec they are given, so that
:mod:`lipgan.run.spec` can call them without an import circle.
"""

from __future__ import annotations

import dataclasses


def field_meta(kind: str = "value", *, resumable: bool = False, recorded: bool = True, **options):
    """A field's metadata: ``kind`` (``data``, ``model``, ``plugin``, ``strategy``,
    ``optimizer`` or ``value``), ``resumable`` (may differ when a run is continued), ``recorded``
    (False: folded into another field's record), ``group`` (a value field holding a dataclass of
    :mod:`lipgan.core.step_config`, by its name)."""
    return {"kind": kind, "resumable": resumable, "recorded": recorded, **options}


def kind_of(field: dataclasses.Field) -> str:
    return field.metadata["kind"]


def recorded_fields(spec) -> list[dataclasses.Field]:
    """The fields a record holds of ``spec`` (an instance or the class), in declaration order."""
    return [f for f in dataclasses.fields(spec) if f.metadata["recorded"]]


def group_class(field: dataclasses.Field) -> type | None:
    """The dataclass a group field holds (:class:`lipgan.StepConfig`...), or None."""
    name = field.metadata.get("group")
    if not name:
        return None
    from lipgan.core import step_config

    return getattr(step_config, name)


def value_json(field: dataclasses.Field, value):
    """A plain-value field as the record holds it (a group: its fields as a dict)."""
    return dataclasses.asdict(value) if group_class(field) else value


def value_from_json(field: dataclasses.Field, recorded: dict, overrides: dict | None = None):
    """A plain-value field read back from a record's ``rebuild`` section: the field's default
    where the record predates it; ``overrides`` win (a group's: ``{its field: value}``)."""
    overrides = overrides or {}
    cls = group_class(field)
    if cls is not None:
        return cls(**{**recorded.get(field.name, {}), **overrides})
    if field.name in overrides:
        return overrides[field.name]
    return recorded.get(field.name, field.default)


def defaults(spec) -> dict:
    """``{'step_config.n_critic': 5, 'checkpoint_input': True, ...}``: each plain field's default
    as the record holds it, read where a record predates the field."""
    out = {}
    for f in recorded_fields(spec):
        if kind_of(f) != "value":
            continue
        cls = group_class(f)
        if cls is not None:
            out.update({f"{f.name}.{g.name}": g.default for g in dataclasses.fields(cls)})
        else:
            out[f.name] = f.default
    return out
