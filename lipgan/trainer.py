"""lipgan's Python API: :class:`Trainer` builds a WGAN from plain Python objects and trains it.

The CLI is a client of this module: ``lipgan run`` turns gin bindings into the arguments below and
calls :meth:`Trainer.fit`, so resuming, checkpoints, the non-finite guard, interrupts, TensorBoard,
evaluation and sample images behave the same from Python as from the command line::

    import keras, lipgan
    from lipgan.constraints import GradientPenalty

    trainer = lipgan.Trainer(
        data="lipgan_toy/8gaussians",                 # a TFDS name, a tf.data.Dataset, or a factory
        critic=lambda shape: lipgan.models.mlp_critic(shape, width=128),   # or a keras.Model
        generator=lambda shape: lipgan.models.mlp_generator(shape, width=128),
        constraint=GradientPenalty(weight=0.1),
        step_config=lipgan.StepConfig(global_batch_size=256, n_critic=5, seed=0),
        intervals=lipgan.Intervals(log_every=100, checkpoint_every=500),
    )
    state = trainer.fit(steps=1000, run_dir="runs/gp")   # re-running it resumes the run
    points = trainer.sample(1024)

The shape follows flax's ``train_and_evaluate(config, workdir) -> state`` and Keras' ``fit``: the
trainer owns the models; :meth:`fit` returns a :class:`TrainState` holding them, the step and the
metrics history; ``callbacks`` see every logged step.

A run dir records :meth:`Trainer.settings`, a canonical JSON description of everything that
determines what a step computes (no gin needed), so re-using a run dir with a different learning
rate, penalty weight or architecture is refused from Python exactly as from the CLI.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from lipgan import evaluation
from lipgan.architecture import recording
from lipgan.callbacks import Callback
from lipgan.constraint import Constraint
from lipgan.data.adapt import data_factory as _data_factory
from lipgan.engine import WGAN, Intervals, StepConfig  # noqa: F401 - Intervals: public here too
from lipgan.errors import CheckpointError, ConfigError
from lipgan.loop import TrainingLoop, TrainState
from lipgan.ranges import check_bool, check_int, out_of_range
from lipgan.rundir import flat_settings
from lipgan.strategy import StrategyPlugin


# -- turning plain Python objects into what the engine needs ---------------------------------------
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


def _strategy_plugin(strategy) -> StrategyPlugin:
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


def _note_once(text: str, write: Callable[[str], None] = print) -> None:
    if text not in _noted:
        _noted.add(text)
        write(text)


def _model_factory(model, what: str) -> Callable:
    """A ``data_shape -> keras.Model`` factory, called inside ``strategy.scope()`` by the engine."""
    if isinstance(model, keras.Model):
        _note_once(GIVEN_WEIGHTS_NOTE)
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


def _optimizer_factory(optimizer, what: str) -> Callable:
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


# -- the canonical settings record ---------------------------------------------------------------
def _plain(value):
    """A JSON-stable form of a setting (numbers, strings, lists, dicts; anything else as repr).

    Floats are written at float32 precision (shortest repr): Keras keeps hyper-parameters in float32
    variables, so 1e-3 reads back as 0.0010000000474974513; both mean the same setting.
    """
    return json.loads(json.dumps(value, sort_keys=True, default=repr), parse_float=_float32)


def _float32(text: str) -> float:
    with np.errstate(over="ignore"):  # beyond float32 is inf, which the settings check refuses
        return float(str(np.float32(float(text))))


def _object_settings(obj) -> dict:
    """A plugin instance's name, public attributes and constructor arguments (the binding).

    The arguments are recorded by :class:`lipgan.named.Named` whatever ``__init__`` does with
    them: a parameter kept in a private attribute (``self._w``) is compared too.
    """
    params = {k: v for k, v in vars(obj).items() if not k.startswith("_")}
    arguments = getattr(obj, "arguments", None)
    if arguments is not None:  # those the public attributes of the same name do not already show
        params["arguments"] = {k: v for k, v in arguments.items() if k not in params}
    return _plain({"class": getattr(obj, "name", "") or type(obj).__qualname__, **params})


def _leaf_layers(model) -> list:
    layers = []
    for layer in getattr(model, "layers", []):
        layers.extend(_leaf_layers(layer) if getattr(layer, "layers", None) else [layer])
    return layers


def model_settings(model: keras.Model) -> dict:
    """Architecture of a built model: parameter count and a hash of its layers' configs.

    Layer names are left out of the hash (Keras numbers unnamed layers per process), so the same
    factory gives the same record in every process.
    """
    configs = []
    for layer in _leaf_layers(model):
        config = dict(layer.get_config())
        config.pop("name", None)
        configs.append([type(layer).__name__, config])
    digest = hashlib.sha256(json.dumps(_plain(configs), sort_keys=True).encode()).hexdigest()
    return {"parameters": int(model.count_params()), "architecture": digest[:16]}


def optimizer_settings(optimizer) -> dict:
    config = dict(optimizer.get_config())
    config.pop("name", None)
    return _plain({"class": type(optimizer).__name__, **config})


def data_settings(data: Callable, fingerprint: str | None = None) -> dict:
    settings = getattr(data, "settings", None)
    if settings is not None:
        out = _plain(settings)
    else:
        name = f"{getattr(data, '__module__', '')}.{getattr(data, '__qualname__', repr(data))}"
        out = {"factory": name}
    if not hasattr(data, "dataset_name"):  # a named dataset is described by its settings
        out["fingerprint"] = fingerprint
    return out


#: Global batches hashed by :func:`data_fingerprint`.
FINGERPRINT_BATCHES = 2
#: Dataset ops that make a pipeline's stream differ between iterators or hide the data from its
#: graph: a Dataset object holding one cannot be read a second time without changing what training
#: reads (with reshuffle_each_iteration, every iterator of one dataset shuffles differently).
_UNREPEATABLE_OPS = ("Shuffle", "Random", "PyFunc", "Generator", "Sampling")


def data_fingerprint(data: Callable, global_batch_size: int, seed: int) -> tuple[str | None, str]:
    """A hash of the first global batches under the seed, or ``None`` and why it cannot be taken.

    Python data (a ``tf.data.Dataset`` or a factory) is otherwise recorded only by its element
    spec or its factory's name, so another dataset of the same shape would resume a run.
    A factory is built twice under the seed (the stream must repeat, or there is nothing to
    compare); a Dataset object only when its graph has no random or Python op, because a second
    iterator over it could shift the stream training reads. Named datasets are described by their
    settings and are not read here.
    """
    examples = getattr(data, "examples", None)
    if examples is not None:
        ops = _dataset_ops(examples)
        unrepeatable = sorted({op for op in ops if any(u in op for u in _UNREPEATABLE_OPS)})
        if unrepeatable:
            return None, f"its pipeline has {', '.join(unrepeatable)}"
        return _hash_batches(data(global_batch_size, seed)), ""
    hashes = []
    for _ in range(2):
        keras.utils.set_random_seed(seed)
        hashes.append(_hash_batches(data(global_batch_size, seed)))
    if hashes[0] != hashes[1]:
        return None, "the factory gives different batches when built twice under the same seed"
    return hashes[0], ""


def _dataset_ops(dataset: tf.data.Dataset) -> set[str]:
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString(dataset._as_serialized_graph().numpy())  # noqa: SLF001
    ops = {node.op for node in graph.node}
    for function in graph.library.function:
        ops.update(node.op for node in function.node_def)
    return ops


def _hash_batches(batches: tf.data.Dataset) -> str:
    digest = hashlib.sha256()
    for batch in batches.take(FINGERPRINT_BATCHES):
        for tensor in tf.nest.flatten(batch):
            value = np.asarray(tensor)
            digest.update(f"{value.dtype}{value.shape}".encode())
            digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()[:16]


def nonfinite_settings(settings: dict) -> list[str]:
    """``['constraint.weight=inf', ...]``: numeric settings that are NaN or infinite."""
    return [
        f"{key}={value!r}"
        for key, value in flat_settings(settings).items()
        if isinstance(value, float) and not np.isfinite(value)
    ]


def out_of_range_settings(settings: dict) -> list[str]:
    """``['critic_optimizer.learning_rate=-0.001 must be > 0', ...]``: optimizer settings out of
    their range (:func:`lipgan.ranges.out_of_range`; a schedule's rates included)."""
    bad = []
    for key, value in flat_settings(settings).items():
        leaf = key.rsplit(".", 1)[-1]
        if not key.endswith("_optimizer." + leaf) and ".learning_rate." not in key:
            continue
        rule = out_of_range(leaf, value)
        if rule:
            bad.append(f"{key}={value!r} must be {rule}")
    return bad


def check_ranges(settings: dict) -> None:
    """One-line :class:`ConfigError` for the first out-of-range setting (before anything is
    written)."""
    bad = out_of_range_settings(settings)
    if bad:
        raise ConfigError(bad[0])


# -- the trainer -----------------------------------------------------------------------------------
class Trainer:
    """A WGAN on a strategy, ready to :meth:`fit`, :meth:`evaluate`, :meth:`audit` and :meth:`sample`.

    What the trainer holds: :attr:`dataset` (the ``(global_batch_size, seed) -> dataset`` factory
    made from ``data``), :attr:`batches` (the ``tf.data.Dataset`` of global batches training
    reads), :attr:`step_config`, :attr:`intervals`, :attr:`critic`, :attr:`generator`, :attr:`step`.

    Building seeds Keras and TensorFlow with ``step_config.seed`` (initial weights and any op without its
    own seed), as ``lipgan run`` does. A model given as an object keeps the weights it has: the
    seed then covers noise, interpolation and shuffling only (said once per process,
    :data:`GIVEN_WEIGHTS_NOTE`); pass a factory to have the seed draw the initial weights.

    Args:
        data: a TFDS or lipgan dataset name (``"lipgan_toy/8gaussians"``, ``"cifar10"``), a
            ``tf.data.Dataset`` of single examples (lipgan repeats and batches it; shuffle it
            yourself), or a factory ``(global_batch_size, seed) -> tf.data.Dataset`` of global
            batches. A dataset may also be batched (it is unbatched), hold dicts as ``tfds.load``
            returns (see ``data_key``), or be a NumPy array; float64 is cast to float32 and
            integer images are scaled to [-1, 1] (:mod:`lipgan.data.adapt`).
        critic: a ``keras.Model`` or a factory ``data_shape -> keras.Model`` (a factory is called
            inside ``strategy.scope()``; a model made outside it is cloned there when the strategy
            has several replicas). A constraint may wrap the critic (spectral norm; the
            penalties' exact ReLU pruning): the model that trains is :attr:`critic`.
        generator: the same for the generator; its ``keras.Input`` shape sets the latent size.
        constraint: a :class:`lipgan.Constraint` (``lipgan.constraints.GradientPenalty()``...).
        strategy: a lipgan strategy (``lipgan.strategies.Mirrored()``), a
            ``tf.distribute.Strategy``, or None for TensorFlow's default.
        critic_optimizer: a Keras optimizer or a factory (default: WGAN-GP's Adam(1e-4, 0.5,
            0.9)); an optimizer is re-made from its config in scope.
        generator_optimizer: the same for the generator.
        step_config: :class:`lipgan.StepConfig` (batch, n_critic, seed, XLA, precision); default
            ``StepConfig()``.
        intervals: :class:`lipgan.Intervals` (logging, checkpoints, evaluation...); default
            ``Intervals()``.
        checkpoint_input: store the input pipeline's position in each checkpoint; with False a
            resume replays the seeded input stream to the same position instead.
        inception_weights: a local InceptionV3 weights file for FID/KID on image data (lipgan
            downloads nothing); None leaves those metrics out.
        data_key: the feature of dict examples to train on (default ``'image'``, or the only key).
        step: the old name of ``step_config``, accepted with a DeprecationWarning
            (:attr:`step` is the iteration count).

    Raises:
        ConfigError: a setting out of range or of the wrong kind, before anything is written.
    """

    def __init__(
        self,
        *,
        data,
        critic,
        generator,
        constraint: Constraint,
        strategy=None,
        critic_optimizer=None,
        generator_optimizer=None,
        step_config: StepConfig | None = None,
        intervals: Intervals | None = None,
        checkpoint_input: bool = True,
        inception_weights: str | None = None,
        data_key: str | None = None,
        step: StepConfig | None = None,
    ):
        if step is not None:  # the old name, kept for one release
            warnings.warn(
                "Trainer(step=...) is now Trainer(step_config=...); trainer.step is the "
                "iteration count",
                DeprecationWarning,
                stacklevel=2,
            )
            if step_config is not None:
                raise ConfigError("pass step_config= only (step= is its old name)")
            step_config = step
        if not isinstance(constraint, Constraint):
            raise ConfigError(
                f"train.constraint must be a constraint, e.g. @gradient_penalty(); got {constraint!r}"
            )
        check_bool(checkpoint_input, "checkpoint_input")
        self.strategy = _strategy_plugin(strategy)
        self.step_config = step_config or StepConfig()
        self.intervals = intervals or Intervals()
        self.constraint = constraint
        self.dataset = _data_factory(data, data_key)
        self.checkpoint_input = bool(checkpoint_input)
        self.inception_weights = inception_weights
        config = self.step_config
        self.tf_strategy = self.strategy.create()
        # Seed first: TF ops without their own seed (and the data pipeline's defaults) then behave
        # the same in every process, and initial weights are identical on any replica count.
        keras.utils.set_random_seed(config.seed)
        self.batches = self.dataset(config.global_batch_size, config.seed)
        self._fingerprint: tuple[str | None, str] | None = None
        # And again: building a dataset the first time on a machine consumes global random state
        # (TFDS runs TF ops), which must not change the first run's initial weights.
        keras.utils.set_random_seed(config.seed)
        #: The models as the factories built them, before a constraint wraps the critic: what the
        #: run dir describes (:mod:`lipgan.architecture`).
        self.built_models: dict[str, keras.Model] = {}
        self.wgan = WGAN(
            self.tf_strategy,
            critic=recording(_model_factory(critic, "critic"), self.built_models, "critic"),
            generator=recording(
                _model_factory(generator, "generator"), self.built_models, "generator"
            ),
            critic_optimizer=_optimizer_factory(critic_optimizer, "critic_optimizer"),
            generator_optimizer=_optimizer_factory(generator_optimizer, "generator_optimizer"),
            constraint=constraint,
            data_shape=self.batches.element_spec.shape[1:],
            config=config,
        )
        check_critic_output(self.wgan.critic)
        check_ranges(  # now, not only when fit() is called: nothing is written before either
            {
                "critic_optimizer": optimizer_settings(self.wgan.critic_optimizer),
                "generator_optimizer": optimizer_settings(self.wgan.generator_optimizer),
            }
        )
        self._iterator, self._input_step = None, 0

    # -- what the trainer holds ------------------------------------------------------------------
    def input_iterator(self):
        """The distributed iterator training reads, made on first use and kept across :meth:`fit`
        calls, so a second call continues the data where the first stopped."""
        if self._iterator is None:
            self._iterator = self.wgan.distribute(self.batches)
            self._input_step = 0
        return self._iterator

    @property
    def input_step(self) -> int | None:
        """The iteration the input iterator's next batches are for (``None``: unknown)."""
        return self._input_step

    def input_at(self, iterator, step: int | None) -> None:
        """Record that ``iterator`` (now the one training reads) is positioned for ``step``."""
        self._iterator, self._input_step = iterator, step

    @property
    def critic(self) -> keras.Model:
        """The critic that trains (as the constraint wrapped it)."""
        return self.wgan.critic

    @property
    def generator(self) -> keras.Model:
        """The generator."""
        return self.wgan.generator

    @property
    def step(self) -> int:
        """Iterations trained so far (restored ones included)."""
        return int(self.wgan.iteration.numpy())

    @property
    def seed(self) -> int:
        """``step_config.seed``."""
        return self.step_config.seed

    @property
    def global_batch_size(self) -> int:
        """``step_config.global_batch_size``."""
        return self.step_config.global_batch_size

    @property
    def chief(self) -> bool:
        """Whether this process writes the run dir (False on multi-worker workers but one)."""
        return self.strategy.is_chief(self.tf_strategy)

    def settings(self) -> dict:
        """Everything that decides what a step computes, as canonical JSON-able data.

        Recorded in the run dir (``settings.json``) and compared when the dir is reused: only the
        keys in :data:`lipgan.rundir.RESUMABLE_SETTINGS` may differ without ``force``.

        Returns:
            A dict of plain JSON values: data, models, constraint, strategy, optimizers, step
            config, intervals.

        Raises:
            ConfigError: a numeric setting is not a finite float32 number.
        """
        settings = {
            "data": data_settings(self.dataset, self.data_fingerprint()[0]),
            "critic": model_settings(self.wgan.critic),
            "generator": model_settings(self.wgan.generator),
            "constraint": _object_settings(self.constraint),
            "strategy": _object_settings(self.strategy),
            "critic_optimizer": optimizer_settings(self.wgan.critic_optimizer),
            "generator_optimizer": optimizer_settings(self.wgan.generator_optimizer),
            "step": _plain(dataclasses.asdict(self.step_config)),
            "intervals": dataclasses.asdict(self.intervals),
            "checkpoint_input": self.checkpoint_input,
            "inception_weights": self.inception_weights,
        }
        bad = nonfinite_settings(settings)
        if bad:
            raise ConfigError(
                f"{bad[0]} is not a finite number (settings are float32, as Keras keeps them: "
                "at most 3.4e38); numeric settings must be finite"
            )
        check_ranges(settings)
        return settings

    def data_fingerprint(self) -> tuple[str | None, str]:
        """:func:`data_fingerprint` of this trainer's data, taken once (``(None, '')`` for a named
        dataset, which its settings describe)."""
        if hasattr(self.dataset, "dataset_name"):
            return None, ""
        if self._fingerprint is None:
            config = self.step_config
            self._fingerprint = data_fingerprint(
                self.dataset, config.global_batch_size, config.seed
            )
        return self._fingerprint

    # -- training --------------------------------------------------------------------------------
    def fit(
        self,
        steps: int,
        *,
        run_dir: str | Path | None = None,
        force: bool = False,
        callbacks: Iterable[Callback] = (),
        verbose: int = 1,
        progress=None,
    ) -> TrainState:
        """Train until iteration ``steps`` in total (each ``n_critic`` critic updates + 1 generator
        update), as ``train.steps`` counts them: ``fit(10)`` then ``fit(20)`` trains 10 more, and a
        second ``fit(10)`` trains nothing. The data continues where the last call stopped; the
        returned state's step, the history's steps and the checkpoint names are all iterations
        since the start of training (Keras' ``epochs`` counts per call instead).

        ``verbose`` as in Keras: 0 prints nothing, 1 a progress bar on a terminal (plain lines
        elsewhere), 2 one line per logged step. The progress display is a :class:`Callback`;
        ``progress=`` passes your own (the CLI does).

        With ``run_dir``, a directory holding a run of the same settings is resumed from its latest
        checkpoint (a different one is refused unless ``force``), checkpoints and metrics are
        written there, SIGINT/SIGTERM stop with a checkpoint (:class:`lipgan.errors.Interrupted`),
        and a non-finite loss or gradient raises :class:`lipgan.errors.NonFiniteLossError` naming the
        term and step. Each callback is given this trainer first (:meth:`Callback.set_trainer`).

        Args:
            steps: the iteration to train until, counted from the start of training (>= 1).
            run_dir: where checkpoints, metrics and the settings record go; None keeps everything
                in memory.
            force: continue a run dir whose recorded settings differ (the replaced records are
                kept beside the new ones).
            callbacks: :class:`Callback` objects called at every logged step, evaluation,
                checkpoint, and at the start and end.
            verbose: 0, 1 or 2, as in Keras.
            progress: a progress :class:`Callback` to use instead of the one ``verbose`` picks;
                False for none.

        Returns:
            The :class:`TrainState`: the models, the iteration reached and the logged history.

        Raises:
            RunDirError: ``run_dir`` holds a run with other settings and ``force`` is not set.
            Interrupted: SIGINT or SIGTERM stopped training (a checkpoint was saved).
            NonFiniteLossError: a loss, gradient or weight became NaN or infinite.
        """
        from lipgan.progress import for_verbose

        check_int(steps, "steps", minimum=1)
        check_bool(force, "force")
        if progress is None or progress is False:
            progress = for_verbose(0 if progress is False else verbose)
        if self.intervals.eval_every:
            evaluation.check_num_samples(self.wgan, self.dataset, self.intervals.eval_samples)
        callbacks = [progress, *callbacks]  # progress first: its lines precede a callback's
        for callback in callbacks:
            callback.set_trainer(self)
        loop = TrainingLoop(self, self.batches, progress, steps=int(steps), callbacks=callbacks)
        return loop.run(run_dir, force=force, settings=self.settings())

    # -- using a trained (or restored) model -----------------------------------------------------
    def restore(self, run_dir: str | Path, warn: Callable[[str], None] = print) -> int:
        """Load the latest readable checkpoint of ``run_dir`` (models only); its step.

        Args:
            run_dir: a run directory written by :meth:`fit` or ``lipgan run``.
            warn: where a skipped (unreadable) checkpoint is reported.

        Returns:
            The iteration of the checkpoint that was restored.

        Raises:
            CheckpointError: ``run_dir`` holds no readable checkpoint.
        """
        from lipgan.checkpoint import RunCheckpoint

        checkpoint = RunCheckpoint(run_dir, self.wgan, training=False)
        if not checkpoint.available():
            raise CheckpointError(
                f"no checkpoint in {Path(run_dir) / 'checkpoints'}; train first with "
                f"`lipgan run --run-dir {run_dir}`"
            )
        return checkpoint.restore(warn)

    def evaluate(self, num_samples: int | None = None) -> dict:
        """The metrics that apply to this data (``lipgan eval``'s), as ``{'eval/...': float}``: the
        critic's estimate always; on data lipgan has no metric for, W1 to the data with its
        real-vs-real floor (:func:`lipgan.evaluation.data_w1`).

        Args:
            num_samples: generated (and real) samples to evaluate on, >= 2; default
                ``intervals.eval_samples``.

        Returns:
            ``{'eval/<metric>': float}`` (docs/metrics.md says what each means).
        """
        return evaluation.evaluate(
            self.wgan,
            self.dataset,
            seed=self.seed,
            batch_size=self.global_batch_size,
            num_samples=self.intervals.eval_samples if num_samples is None else num_samples,
            inception_weights=self.inception_weights,
        )

    def audit(self, points: int = 512, seed: int | None = None) -> dict:
        """Lower and certified upper bounds on the critic's Lipschitz constant (``lipgan audit``'s
        result, :func:`lipgan.audit.audit`) at ``points`` real, generated and interpolated points
        each, drawn with ``seed`` (default: the run's).

        Args:
            points: real, generated and interpolated points each, >= 1.
            seed: the seed of the points' draw; None uses the run's.

        Returns:
            The audit as a dict: ``lower_bound`` (the largest per-example Jacobian norm, also per
            point set), mean Jacobian norms, and ``upper_bound``, a guaranteed bound with its
            source (None where none is known), as :func:`lipgan.audit.audit` returns them.
        """
        from lipgan.audit import audit

        if isinstance(points, bool) or not isinstance(points, (int, np.integer)) or points < 1:
            raise ConfigError(f"audit(points={points!r}): points must be an integer >= 1")
        seed = self.seed if seed is None else seed
        real = evaluation.real_samples(self.dataset, points, self.global_batch_size, seed)
        return audit(self, real, self.sample(points, seed), seed=seed)

    def sample(self, n: int, seed: int | None = None) -> np.ndarray:
        """``n`` generated examples from a fixed noise (the same ``seed`` gives the same samples).

        Args:
            n: how many examples.
            seed: the noise's seed; None uses the run's.

        Returns:
            A ``[n, *data_shape]`` float32 array.
        """
        return evaluation.generate(self.wgan, n, self.seed if seed is None else seed)

    def render(self, n: int) -> bytes | None:
        """A PNG of ``n`` samples (2-D: over the critic's contour, with real points; images: a grid).

        Args:
            n: how many samples to draw.

        Returns:
            The PNG's bytes, or None where the data has no picture.
        """
        real = None
        if self.wgan.data_shape == (2,):
            real = evaluation.real_samples(self.dataset, n, self.global_batch_size, self.seed)
        return evaluation.render(self.wgan, self.sample(n), real, title=f"step {self.step}")
