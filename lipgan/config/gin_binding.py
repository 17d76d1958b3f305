"""Gin binding: the one place where lipgan's functions and plugin classes become configurables.

Library code never calls gin. :func:`register_configurables` exposes the root ``train``, the data and
model factories, the Keras optimizers (scoped ``critic/`` and ``generator/`` in the shipped configs) and
every registered plugin class; :func:`parse` reads files and ``--bind`` strings and turns gin's
multi-line exceptions into one-line :class:`~lipgan.core.errors.ConfigError` messages with file and
line. A run dir's recorded config is read back by :mod:`lipgan.config.recorded`.
"""

from __future__ import annotations

import math
import re
import tokenize
from pathlib import Path

import keras

import gin
from lipgan import models
from lipgan.config import gin_messages
from lipgan.config.gin_messages import configs_dir
from lipgan.config.gin_messages import quiet_gin_logging as _quiet_gin_logging
from lipgan.core.errors import ConfigError, first_line
from lipgan.core.ranges import out_of_range
from lipgan.core.registry import GIN_KINDS, Registry
from lipgan.data import pipeline
from lipgan.data.array_file import array_file
from lipgan.run.record import RecordPart
from lipgan.run.rundir import RunDir

_REGISTERED = False


def _library_configurables():
    from lipgan.config import train_root  # imported here to keep `lipgan.config` light

    return {
        "train": train_root.train,
        "dataset": pipeline.dataset,
        "array_file": array_file,
        "mlp_critic": models.mlp_critic,
        "mlp_generator": models.mlp_generator,
        "dcgan_critic": models.dcgan_critic,
        "dcgan_generator": models.dcgan_generator,
        "resnet_critic": models.resnet_critic,
        "resnet_generator": models.resnet_generator,
        "Adam": keras.optimizers.Adam,
        "RMSprop": keras.optimizers.RMSprop,
        "SGD": keras.optimizers.SGD,
        "linear_decay": linear_decay,
    }


def linear_decay(initial_learning_rate: float, decay_steps: int, final_learning_rate: float = 0.0):
    """Learning rate falling linearly to ``final_learning_rate`` over ``decay_steps`` optimizer steps.

    As in the official WGAN-GP CIFAR code. Note the units: the critic optimizer takes ``n_critic``
    steps per iteration, the generator optimizer one, so scope it:
    ``critic/linear_decay.decay_steps = 5000`` and ``generator/linear_decay.decay_steps = 1000``.
    """
    return keras.optimizers.schedules.PolynomialDecay(
        initial_learning_rate, decay_steps, end_learning_rate=final_learning_rate, power=1.0
    )


def register_configurables(registry: Registry) -> None:
    """Make lipgan's functions and every registered plugin class gin configurables (idempotent)."""
    global _REGISTERED
    if not _REGISTERED:
        for name, fn in _library_configurables().items():
            gin.external_configurable(fn, name=name, module="lipgan")
        # Shipped configs share parts (``include 'parts/toy.gin'``), found from any config's
        # location, the user's own files included.
        gin.add_config_file_search_path(str(configs_dir()))
        _REGISTERED = True
    _expose_plugins(registry)


# gin's registry is process-global, so the record of which plugin classes it knows is too.
_PLUGIN_CONFIGURABLES: dict[str, type] = {}


def _expose_plugins(registry: Registry) -> None:
    """Expose exactly this registry's classes to gin under their names.

    gin's registry is process-global and has no public "unregister": a class registered by an
    earlier discovery (a plugin since blocked or replaced) is dropped from it here, so a blocked
    plugin is as unknown to gin as it is to the CLI.
    """
    current = {entry.name: entry.cls for entry in registry.entries(GIN_KINDS)}
    for name, cls in list(_PLUGIN_CONFIGURABLES.items()):
        if current.get(name) is not cls:
            selector = f"lipgan.{name}"
            if selector in gin.config._REGISTRY:  # noqa: SLF001
                gin.config._REGISTRY.pop(selector)  # noqa: SLF001
            del _PLUGIN_CONFIGURABLES[name]
    for name, cls in current.items():
        if name not in _PLUGIN_CONFIGURABLES:
            gin.external_configurable(cls, name=name, module="lipgan")
            _PLUGIN_CONFIGURABLES[name] = cls


class GinRecord(RecordPart):
    """The CLI's gin config in the run's record (``run.json``'s ``gin`` section), a
    :meth:`lipgan.Trainer.fit` callback (fit knows no gin).

    When training begins: the files and bindings as parsed (``config``), what ``--resume`` and
    ``eval``/``sample``/``audit`` parse again. When it ends normally: every parameter actually
    used, defaults included (``operative``), also written as ``operative_config.gin`` for people
    to read. The training loop writes the record (chief only); nothing compares this section: the
    record's settings are compared.
    """

    key = "gin"

    def __init__(self, run_dir):
        self.run_dir = Path(run_dir)
        self.text = gin.config_str()

    def section(self, final: bool) -> dict:
        return {"config": self.text, "operative": gin.operative_config_str() if final else None}

    def on_train_end(self, state) -> None:
        if self.view is None or self.view.chief:
            RunDir(self.run_dir).write_operative_config(gin.operative_config_str())


def train_configured(*, run_dir, force: bool = False, progress=None):
    """Call the gin-configured root ``train`` on ``run_dir``, recording the config in its record
    (:class:`GinRecord`): ``lipgan run``'s call, and a study cell's."""
    from lipgan.config import train_root

    return gin.get_configurable(train_root.train)(
        run_dir=str(run_dir),
        force=force,
        progress=progress,
        callbacks=[GinRecord(run_dir)],
    )


def query(gin_files: list[str], name: str, registry: Registry):
    """The value that ``gin_files`` bind to ``name`` (e.g. ``train.steps``); leaves gin cleared."""
    parse(gin_files, [], registry)
    try:
        return gin.query_parameter(name)
    except ValueError:
        raise ConfigError(f"{', '.join(gin_files)} binds no {name}") from None
    finally:
        gin.clear_config()


def build_trainer():
    """The :class:`lipgan.Trainer` that the parsed config describes, built but not trained.

    What ``lipgan eval`` / ``sample`` use: the ``train`` bindings, minus those of a ``fit`` call
    (:func:`lipgan.config.train_root.trainer_from_settings`).
    """
    from lipgan.config import train_root

    return train_root.trainer_from_settings(gin.get_bindings(train_root.train))


def trainer_of(gin_files: list[str], bindings: list[str], registry: Registry):
    """The :class:`lipgan.Trainer` that ``gin_files`` and ``bindings`` describe, built but not
    trained; leaves gin cleared (a study's reference rows read its data this way)."""
    parse(gin_files, bindings, registry)
    try:
        return build_trainer()
    finally:
        gin.clear_config()


def configured(cls: type, bindings: dict):
    """An instance of a registered plugin class built by gin from ``{parameter: value}`` bindings.

    For the conformance kit: proves every keyword can be bound in gin and reaches the instance.
    Clears gin's global config before and after (as ``lipgan run`` does before parsing).
    """
    gin.clear_config()
    try:
        gin.parse_config("\n".join(f"{cls.name}.{k} = {v!r}" for k, v in bindings.items()))
        return gin.get_configurable(f"lipgan.{cls.name}")()
    finally:
        gin.clear_config()


def shipped_configs() -> dict[str, Path]:
    """The configs installed with lipgan, by file name.

    They live in ``lipgan/configs`` (package data); the repository's ``gin/`` is a link to it, so
    ``lipgan run --gin gin/wgangp_tpu.gin`` works in a checkout and ``--gin wgangp_tpu`` anywhere.
    """
    root = configs_dir()
    return {p.name: p for p in root.iterdir() if p.name.endswith(".gin")}


def resolve_config_path(path: str) -> Path:
    """A path as given, else a shipped config of that name (``wgangp_toy`` or ``wgangp_toy.gin``)."""
    candidate = Path(path)
    if candidate.is_file():
        return candidate
    if candidate.is_dir():
        raise ConfigError(f"--gin {path} is a directory; pass a .gin file in it")
    if candidate.exists() or candidate.is_symlink():  # there, but not a file: say what it is
        from lipgan.run.record import file_kind

        what = file_kind(candidate.resolve()) if candidate.exists() else file_kind(candidate)
        raise ConfigError(f"--gin {path} is {what}, not a gin file; pass a .gin file")
    shipped = shipped_configs()
    for name in (candidate.name, f"{candidate.name}.gin"):
        if name in shipped:
            return shipped[name]
    known = ", ".join(sorted(shipped))
    raise ConfigError(f"gin file {path!r} not found; shipped configs: {known}")


def error_line(exc: BaseException, where: str, registry: Registry, *, binding: bool = False) -> str:
    """gin's exception ``exc`` as one line (:func:`lipgan.config.gin_messages.one_line`), with
    lipgan's own configurables among the names it suggests."""
    return gin_messages.one_line(
        exc, where, registry, sorted(_library_configurables()), binding=binding
    )


#: The learning-rate schedules whose length :func:`stretched_schedules` follows (the scopes of
#: ``parts/adam_linear_decay.gin``).
SCHEDULES = ("critic/linear_decay.decay_steps", "generator/linear_decay.decay_steps")


def stretched_schedules(gin_files: list[str], steps: int, registry: Registry) -> list[str]:
    """Bindings that stretch the config's linear decays to ``steps`` iterations instead of its own.

    A config written for ``train.steps = 4000`` that decays to 0 over 4,000 iterations run for 400
    would end at 90 % of its initial rate; scaling every decay by ``steps / train.steps`` keeps
    the schedule's shape (the learning rate still reaches its final value on the last step).
    Leaves gin cleared; returns [] when the config has no such schedule.
    """
    parse(gin_files, [], registry)
    try:
        original = int(gin.query_parameter("train.steps"))
        out = []
        for name in SCHEDULES:
            try:
                length = int(gin.query_parameter(name))
            except ValueError:
                continue  # not bound in this config
            out.append(f"{name} = {max(1, round(length * steps / original))}")
        return out
    except ValueError:
        return []
    finally:
        gin.clear_config()


def parse(gin_files: list[str], bindings: list[str], registry: Registry) -> list[Path]:
    """Clear gin, then parse files in order and bindings after them. Returns the resolved paths."""
    register_configurables(registry)
    gin.clear_config()
    paths = [resolve_config_path(f) for f in gin_files]
    for path in paths:
        try:
            with _quiet_gin_logging():
                gin.parse_config_file(str(path))
        except (ValueError, SyntaxError, tokenize.TokenError, TypeError) as exc:
            gin.clear_config()
            raise ConfigError(error_line(exc, str(path), registry)) from None
        except ImportError as exc:
            gin.clear_config()
            found = re.search(r"No module named '([^']+)'", str(exc))
            module = found.group(1) if found else exc.name or "?"
            reason = first_line(exc).split(" In file ")[0]
            raise ConfigError(
                f"{path}: `import {module}` failed ({reason}); install the package that provides "
                "it or remove the import"
            ) from None
        except OSError:
            gin.clear_config()
            raise ConfigError(gin_messages.missing_include(path)) from None
        except RecursionError:
            gin.clear_config()
            loop = gin_messages.include_loop(path.resolve()) or "a file includes itself"
            raise ConfigError(
                f"{path}: its includes form a loop ({loop}); remove the include that closes it"
            ) from None
        except Exception as exc:  # noqa: BLE001 - a module imported by the config raised
            imported = re.search(r"^\s*import\s+([\w.]+)", str(exc), re.MULTILINE)
            if imported is None:
                raise
            gin.clear_config()
            raise ConfigError(
                f"{path}: `import {imported.group(1)}` failed: it raised {type(exc).__name__}: "
                f"{first_line(exc)}; fix that module or remove the import"
            ) from None
    parse_bindings(bindings, registry)
    return paths


def parse_bindings(bindings: list[str], registry: Registry) -> None:
    """Parse ``--bind`` strings after the config, then check every value is finite and in range."""
    for binding in bindings:
        refusal = binding_refusal(binding)
        if refusal:
            gin.clear_config()
            raise ConfigError(refusal)
        try:
            gin.parse_config(binding)
        except (ValueError, SyntaxError, tokenize.TokenError, TypeError) as exc:
            gin.clear_config()
            raise ConfigError(
                error_line(exc, f"--bind {binding!r}", registry, binding=True)
            ) from None
    check_finite(bindings)


_NOT_A_NUMBER = re.compile(r"^\s*([+-]?(?:nan|inf|infinity))\s*$", re.IGNORECASE)


def binding_refusal(binding: str) -> str | None:
    """Why ``binding`` is no ``--bind`` string at all (no ``=``, or a value of nan or inf, which
    gin does not read), as one line; None when gin may read it."""
    if "=" not in binding:
        return f"--bind {binding!r} does not parse; expected 'configurable.param=value'"
    word = _NOT_A_NUMBER.match(binding.split("=", 1)[1])
    if word:
        return (
            f"--bind {binding!r}: {word.group(1)!r} is not a value gin reads, and numeric "
            "parameters must be finite numbers anyway; give a number"
        )
    return None


def _nonfinite(value) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return any(map(_nonfinite, value))
    if isinstance(value, dict):
        return any(map(_nonfinite, value.values()))
    return False


def check_finite(bindings: list[str]) -> None:
    """Refuse a parsed config holding a NaN or infinite number (``weight_clip.c = 1e999``).

    gin reads ``1e999`` as ``inf`` but writes it back into the run's recorded config as ``# None.``, so a
    resume is refused and ``sample``/``eval`` rebuild the model with the default instead; no
    parameter of lipgan means anything at infinity. Checked before anything is written, with the
    optimizer settings' ranges (a negative learning rate, :mod:`lipgan.core.ranges`).
    """
    for (scope, selector), parameters in gin.config._CONFIG.items():  # noqa: SLF001
        for parameter, value in parameters.items():
            if _nonfinite(value):
                name = f"{scope + '/' if scope else ''}{selector.split('.')[-1]}.{parameter}"
                given = next((b for b in bindings if b.split("=")[0].strip().endswith(name)), None)
                where = f"--bind {given!r}: " if given else ""
                gin.clear_config()
                raise ConfigError(
                    f"{where}{name} = {value!r} is not a finite number; numeric parameters must "
                    "be finite (a very large number overflows to inf: write it out smaller)"
                )
            rule = out_of_range(parameter, value)  # learning rates, betas... (lipgan.core.ranges)
            if rule:
                name = f"{scope + '/' if scope else ''}{selector.split('.')[-1]}.{parameter}"
                given = next((b for b in bindings if b.split("=")[0].strip().endswith(name)), None)
                where = f"--bind {given!r}: " if given else ""
                gin.clear_config()
                raise ConfigError(f"{where}{name} = {value!r} is invalid: it must be {rule}")
