"""A run dir's recorded config read back at the gin edge: the Trainer its record describes.

What ``eval``, ``audit``, ``sample`` and ``run --resume`` need of a run dir, whose one record
(``run.json``) :mod:`lipgan.run.rebuild` reads. A run made by ``lipgan run`` recorded its gin
config (:class:`lipgan.config.gin_binding.GinRecord`), parsed again here with the constraint's
arguments that have a new default since pinned to their recorded values (:func:`default_pins`) and
the command's ``--bind`` after them (:func:`parse_text`); a run made in Python recorded its spec, rebuilt by
:meth:`lipgan.run.spec.RunSpec.from_json` with the ``--bind`` strings read by gin's own grammar
(:func:`binding_values`), so ``--bind`` has one grammar either way. :func:`bindings_of` reads a
config as gin writes it (``lipgan config show --json``). Kept apart from
:mod:`lipgan.config.gin_binding`, which parses the files a new run starts from and which this
module builds on.
"""

from __future__ import annotations

import inspect
import re
import tokenize

import gin
from lipgan.config import gin_messages
from lipgan.config.gin_binding import (
    binding_refusal,
    build_trainer,
    error_line,
    parse_bindings,
    register_configurables,
)
from lipgan.config.gin_messages import quiet_gin_logging
from lipgan.core.errors import ConfigError
from lipgan.core.named import is_scalar
from lipgan.core.registry import Registry


def parse_text(text: str, bindings: list[str], registry: Registry) -> None:
    """Clear gin, then parse a run record's gin config (``gin.config_str()`` as it was written)
    and ``bindings`` after it."""
    register_configurables(registry)
    gin.clear_config()
    try:
        with quiet_gin_logging():
            gin.parse_config(gin_messages.convert_recorded(text))
    except Exception as exc:  # noqa: BLE001 - a plugin the run used may be gone, or its module
        gin.clear_config()
        raise ConfigError(
            error_line(exc, "the run's recorded gin config", registry)
            + " (install or enable what the run used)"
        ) from None
    parse_bindings(bindings, registry)


def binding_values(bindings, registry: Registry) -> list[tuple[str, str, object]]:
    """``[(binding, 'train.steps', 20), ...]``: ``--bind`` strings read with gin's own grammar
    (the one grammar of ``--bind``, for a run dir written from Python too), each value as gin
    reads it; a binding gin cannot read is one line, as in
    :func:`lipgan.config.gin_binding.parse`. Leaves gin as it was."""
    import gin.config_parser

    delegate = gin.config.ParserDelegate(skip_unknown=True)
    out = []
    for binding in bindings:
        refusal = binding_refusal(binding)
        if refusal:
            raise ConfigError(refusal)
        try:
            for statement in gin.config_parser.ConfigParser(binding, delegate):
                scope = f"{statement.scope}/" if statement.scope else ""
                name = f"{scope}{statement.selector}.{statement.arg_name}"
                out.append((binding, name, statement.value))
        except (ValueError, SyntaxError, tokenize.TokenError, TypeError) as exc:
            raise ConfigError(
                error_line(exc, f"--bind {binding!r}", registry, binding=True)
            ) from None
    return out


def rebuild_trainer(run_dir, registry: Registry, *, bound=(), **options):
    """(the :class:`lipgan.Trainer` that ``run_dir``'s record describes, the steps to train to),
    built but not restored, on the default strategy (where the user is).

    A run made by ``lipgan run``: its gin config parsed again with the ``--bind`` strings
    ``bound`` after it (leaves gin configured). A run made in Python: its record's spec
    (:meth:`lipgan.run.spec.RunSpec.from_json`, ``options`` are its own), the ``--bind`` strings read
    with gin's grammar (:func:`binding_values`).
    """
    from lipgan.run import rebuild

    run_record = rebuild.read(run_dir)
    text = rebuild.gin_config(run_record)
    if text is not None:
        pins = default_pins(run_record, registry)
        parse_text(text, [*pins, *bound, "train.strategy = @default()"], registry)
        return build_trainer(), int(bound_steps())
    from lipgan.run.spec import RunSpec
    from lipgan.run.trainer import Trainer

    values = binding_values(bound, registry)
    spec, steps = RunSpec.from_json(run_record, run_dir, registry, bound=values, **options)
    return Trainer.from_spec(spec), steps


def default_pins(run_record: dict, registry: Registry) -> list[str]:
    """``["soc.bound = 'holder'"]``: bindings that keep a recorded run's constraint the one it
    trained with, where its gin config left an argument to a default that has since changed.

    A gin config records only what it bound; the record's ``rebuild`` section holds every argument
    of the constraint, defaults included, and :attr:`lipgan.core.named.Named.unrecorded_defaults`
    says what an argument the record predates meant. Parsed before the command's ``--bind``, so a
    user may still bind another value (``lipgan eval`` of the same weights under another
    setting); resume then refuses the difference as for any setting. Only scalar arguments whose
    current default is a scalar are pinned: an object argument was bound by the config itself.
    """
    entry = (run_record.get("rebuild") or {}).get("constraint") or {}
    name, arguments = entry.get("name"), entry.get("arguments")
    if not name or not isinstance(arguments, dict):
        return []
    try:
        cls = registry.get("constraint", name)
    except ConfigError:
        return []  # the recorded config names it too: parsing it says what is missing
    parameters = inspect.signature(cls.__init__).parameters
    pins = []
    for key, value in {**cls.unrecorded_defaults, **arguments}.items():
        parameter = parameters.get(key)
        if parameter is None or parameter.default is inspect.Parameter.empty:
            continue
        if is_scalar(parameter.default) and is_scalar(value) and value != parameter.default:
            pins.append(f"{name}.{key} = {value!r}")
    return pins


def bound_steps() -> int:
    """``train.steps`` as the parsed config binds it (the root's default when it does not)."""
    from lipgan.config import train_root

    try:
        return int(gin.query_parameter("train.steps"))
    except ValueError:
        return train_root.STEPS


_BINDING = re.compile(r"^(?P<key>[\w./]+)\s*=\s*(?P<value>.*)$")


def bindings_of(config_text: str) -> dict[str, str]:
    """``{'scope/configurable.param': 'value'}`` of a gin config as written by ``gin.config_str()``."""
    out: dict[str, str] = {}
    key = None
    for line in config_text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _BINDING.match(line) if not line[0].isspace() else None
        if match:
            key = match.group("key")
            out[key] = match.group("value").strip()
        elif key is not None:  # a long value continued on an indented line
            out[key] += " " + line.strip()
    return out
