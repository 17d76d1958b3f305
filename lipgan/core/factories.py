"""Plain Python objects -> what the engine builds in ``strategy.scope()``.

A :class:`lipgan.Trainer` takes models, optimizers and strategies as objects or as factories; the
engine needs factories it can call inside the strategy's scope (variables made there are
mirrored). These helpers make one from the other and say in one line what cannot be used.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import keras
import tensorflow as tf

from lipgan.core.errors import ConfigError, LipganWarning, first_line
from lipgan.core.strategy import StrategyPlugin


class _GivenStrategy(StrategyPlugin):
    """A ``tf.distribute.Strategy`` the caller already made (or TensorFlow's default one)."""

    name = "given"

    def __init__(self, strategy: tf.distribute.Strategy | None = None):
        self._strategy = strategy

    def create(self) -> tf.distribute.Strategy:
        return self._strategy or tf.distribute.get_strategy()

    def is_chief(self, strategy) -> bool:
        return bool(strategy.extended.should_checkpoint)

    def __repr__(self) -> str:
        return f"{type(self._strategy or tf.distribute.get_strategy()).__name__}()"


def strategy_plugin(strategy) -> StrategyPlugin:
    if strategy is None or isinstance(strategy, tf.distribute.Strategy):
        return _GivenStrategy(strategy)
    if isinstance(strategy, StrategyPlugin):
        return strategy
    raise ConfigError(
        f"strategy must be a lipgan strategy (e.g. lipgan.strategies.Mirrored()) or a "
        f"tf.distribute.Strategy; got {strategy!r}"
    )


#: Said once per process: a model object's weights are not re-drawn from the seed.
GIVEN_WEIGHTS_NOTE = (
    "note: models given as keras.Model objects keep their weights as they are; StepConfig.seed "
    "covers noise, interpolation and shuffling only (pass a factory data_shape -> model to seed "
    "the initial weights too)"
)
_noted: set[str] = set()


def note_once(text: str) -> None:
    """Warn (:class:`lipgan.core.errors.LipganWarning`) with ``text`` once per process."""
    if text not in _noted:
        _noted.add(text)
        warnings.warn(text, LipganWarning, stacklevel=4)


def model_factory(model, what: str) -> Callable:
    """A ``data_shape -> keras.Model`` factory, called inside ``strategy.scope()`` by the engine."""
    if isinstance(model, keras.Model):
        note_once(GIVEN_WEIGHTS_NOTE)
        if isinstance(model, keras.Sequential) and not _has_input(model):
            raise ConfigError(
                f"{what}: {type(model).__name__} {model.name!r} has no input shape yet; start it "
                "with keras.Input(shape=...) (a generator's Input shape sets the latent size), or "
                "pass a factory data_shape -> model"
            )

        def reuse(data_shape):
            if tf.distribute.get_strategy().num_replicas_in_sync == 1:
                return model
            # Variables made outside strategy.scope() are not mirrored: rebuild the same
            # architecture in scope and copy the weights over.
            try:
                clone = keras.models.clone_model(model)
            except (ValueError, TypeError):
                raise ConfigError(
                    f"{what}: a subclassed keras.Model made outside strategy.scope() cannot be "
                    "replicated; pass a factory (data_shape -> model) instead"
                ) from None
            clone.set_weights(model.get_weights())
            return clone

        return reuse
    if callable(model):
        return model
    raise ConfigError(
        f"{what} must be a keras.Model or a factory data_shape -> model; got {model!r}"
    )


def _has_input(model: keras.Model) -> bool:
    try:
        return bool(model.inputs)
    except (AttributeError, ValueError):
        return False


def check_critic_output(critic: keras.Model) -> None:
    """A critic scores each example with one number: ``[b, 1]`` or ``[b]``."""
    try:
        shape = tuple(critic.output_shape)
    except (AttributeError, ValueError, RuntimeError):
        return  # a subclassed model: its scores are checked when they are used
    if shape[1:] not in ((1,), ()):
        raise ConfigError(
            f"critic: output shape {shape} — a critic gives one score per example; end it with "
            "keras.layers.Dense(1)"
        )


def optimizer_factory(optimizer, what: str) -> Callable:
    """A factory making the optimizer in ``strategy.scope()`` (its variables must be mirrored)."""
    if optimizer is None:
        # Gulrajani et al. 2017, Algorithm 1: Adam(1e-4, β1 = 0.5, β2 = 0.9).
        return lambda: keras.optimizers.Adam(1e-4, beta_1=0.5, beta_2=0.9)
    if isinstance(optimizer, keras.optimizers.Optimizer):
        config = optimizer.get_config()
        return lambda: type(optimizer).from_config(config)
    if callable(optimizer):
        return optimizer
    raise ConfigError(f"{what} must be a keras optimizer or a factory; got {optimizer!r}")


def recording(factory: Callable, built: dict, key: str) -> Callable:
    """``factory`` that also keeps the model it builds in ``built[key]`` (before a constraint
    wraps it): what the run record describes (:mod:`lipgan.run.description`)."""

    def build(data_shape):
        built[key] = factory(data_shape)
        return built[key]

    return build


def generator_shape(generator, which: str) -> tuple:
    """The generator's ``input_shape`` (the latent size) or ``output_shape`` without the batch,
    or one line: a subclassed model built without ``keras.Input`` has neither."""
    try:
        return tuple(getattr(generator, which)[1:])
    except (AttributeError, ValueError, RuntimeError, TypeError) as exc:
        raise ConfigError(
            f"generator: {type(generator).__name__} {generator.name!r} has no {which} "
            f"({first_line(exc, 120)}), and its input shape sets the latent size; build it from "
            "keras.Input(shape=(latent_size,)) (a Functional or Sequential model), or call the "
            "subclass once on a batch of noise before giving it to lipgan"
        ) from None
