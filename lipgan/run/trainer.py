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

A run dir records :meth:`Trainer.settings` in its ``run.json`` (:mod:`lipgan.run.record`), a
canonical JSON description of everything that determines what a step computes (no gin needed), so
re-using a run dir with a different learning rate, penalty weight or architecture is refused from
Python exactly as from the CLI. The record also describes the trainer
(:mod:`lipgan.run.description`), so ``lipgan eval/sample/audit/run --resume`` rebuild it without the
script (:mod:`lipgan.run.rebuild`).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable
from pathlib import Path

import keras
import numpy as np

from lipgan.core.callbacks import Callback, FitView, Sampler
from lipgan.core.engine import WGAN
from lipgan.core.errors import CheckpointError, ConfigError
from lipgan.core.factories import (
    check_critic_output,
    model_factory,
    optimizer_factory,
    recording,
    strategy_plugin,
)
from lipgan.core.ranges import check_bool, check_int
from lipgan.core.train_state import TrainState
from lipgan.data.adapt import data_factory as _data_factory
from lipgan.metrics import evaluation
from lipgan.run import description
from lipgan.run.loggers import make_loggers
from lipgan.run.loop import TrainingLoop
from lipgan.run.settings import check_ranges, data_fingerprint, optimizer_settings
from lipgan.run.spec import RunSpec, settings_differences, settings_digest
from lipgan.run.training_input import TrainingInput


# -- the trainer -----------------------------------------------------------------------------------
class Trainer:
    """A WGAN on a strategy, ready to :meth:`fit`, :meth:`evaluate`, :meth:`audit` and :meth:`sample`.

    What the trainer holds: :attr:`data_factory` (the ``(global_batch_size, seed) -> dataset`` factory
    made from ``data``), :attr:`batches` (the ``tf.data.Dataset`` of global batches training
    reads), :attr:`step_config`, :attr:`intervals`, :attr:`critic`, :attr:`generator`, :attr:`step`
    (the iterations trained: each ``n_critic`` critic updates + 1 generator update).

    Building seeds Keras and TensorFlow with ``step_config.seed`` (initial weights and any op without its
    own seed), as ``lipgan run`` does. A model given as an object keeps the weights it has: the
    seed then covers noise, interpolation and shuffling only (said once per process,
    :data:`lipgan.core.factories.GIVEN_WEIGHTS_NOTE`); pass a factory to have the seed draw the
    initial weights.

    Args:
        **keywords: the fields of :class:`lipgan.run.spec.RunSpec` (``data``, ``critic``,
            ``generator``, ``constraint``, ``strategy``, the optimizers, ``step_config``,
            ``intervals``, ``checkpoint_input``, ``inception_weights``, ``data_key``), each
            documented there. ``Trainer(**keywords)`` is ``Trainer.from_spec(RunSpec(**keywords))``.

    Raises:
        ConfigError: a setting out of range or of the wrong kind, before anything is written.
    """

    def __init__(self, **keywords):
        self._build(RunSpec(**keywords))

    @classmethod
    def from_spec(cls, spec: RunSpec) -> Trainer:
        """The trainer ``spec`` describes (built, not trained): what ``lipgan run`` builds from
        its gin config and ``lipgan run --resume`` from a run dir's record."""
        trainer = cls.__new__(cls)
        trainer._build(spec)
        return trainer

    def _build(self, spec: RunSpec) -> None:
        #: The :class:`lipgan.run.spec.RunSpec` this trainer was built from (what its run dir records).
        self.spec = spec
        self.strategy = strategy_plugin(spec.strategy)
        self.step_config = spec.step_config
        self.intervals = spec.intervals
        self.constraint = spec.constraint
        self.data_factory = _data_factory(spec.data, spec.data_key)
        self.checkpoint_input = bool(spec.checkpoint_input)
        self.inception_weights = spec.inception_weights
        config = self.step_config
        self.tf_strategy = self.strategy.create()
        # Seed first: TF ops without their own seed (and the data pipeline's defaults) then behave
        # the same in every process, and initial weights are identical on any replica count.
        keras.utils.set_random_seed(config.seed)
        #: The data stream and its position (what the training loop reads and moves).
        self.inputs = TrainingInput(self.data_factory, config.global_batch_size, config.seed)
        self._fingerprint: tuple[str | None, str] | None = None
        # And again: building a dataset the first time on a machine consumes global random state
        # (TFDS runs TF ops), which must not change the first run's initial weights.
        keras.utils.set_random_seed(config.seed)
        #: The models as the factories built them, before a constraint wraps the critic: what the
        #: run record describes (:mod:`lipgan.run.description`).
        self.built_models: dict[str, keras.Model] = {}
        self.wgan = WGAN(
            self.tf_strategy,
            critic=recording(model_factory(spec.critic, "critic"), self.built_models, "critic"),
            generator=recording(
                model_factory(spec.generator, "generator"), self.built_models, "generator"
            ),
            critic_optimizer=optimizer_factory(spec.critic_optimizer, "critic_optimizer"),
            generator_optimizer=optimizer_factory(spec.generator_optimizer, "generator_optimizer"),
            constraint=spec.constraint,
            data_shape=self.batches.element_spec.shape[1:],
            config=config,
        )
        check_critic_output(self.wgan.critic)
        check_ranges(  # once, here, where the spec is built: nothing is written before it
            {
                "critic_optimizer": optimizer_settings(self.wgan.critic_optimizer),
                "generator_optimizer": optimizer_settings(self.wgan.generator_optimizer),
            }
        )

    # -- what the trainer holds ------------------------------------------------------------------
    @property
    def batches(self):
        """The ``tf.data.Dataset`` of global batches training reads."""
        return self.inputs.batches

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

        Recorded in the run dir (``run.json``, :mod:`lipgan.run.record`) and compared when the dir is
        reused: only the keys in :data:`lipgan.run.spec.RESUMABLE` may differ without
        ``force``.

        Returns:
            A dict of plain JSON values: data, models, constraint, strategy, optimizers, step
            config, intervals (:func:`lipgan.run.settings.spec_settings`).

        Raises:
            ConfigError: a numeric setting is not a finite float32 number.
        """
        return self.spec.settings(self)

    def data_fingerprint(self) -> tuple[str | None, str]:
        """:func:`data_fingerprint` of this trainer's data, taken once (``(None, '')`` for a named
        dataset, which its settings describe)."""
        if hasattr(self.data_factory, "dataset_name"):
            return None, ""
        if self._fingerprint is None:
            config = self.step_config
            self._fingerprint = data_fingerprint(
                self.data_factory, config.global_batch_size, config.seed
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
        loggers: Iterable[str] = (),
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
        written there, SIGINT/SIGTERM stop with a checkpoint (:class:`lipgan.core.errors.Interrupted`),
        and a non-finite loss or gradient raises :class:`lipgan.core.errors.NonFiniteLossError` naming the
        term and step. Each callback is given a view of the run first (:meth:`Callback.set_view`).

        Args:
            steps: the iteration to train until, counted from the start of training (>= 1).
            run_dir: where checkpoints, metrics and the record (``run.json``) go; None keeps
                everything in memory.
            force: continue a run dir whose recorded settings differ (the replaced records are
                kept beside the new ones).
            callbacks: :class:`Callback` objects called at every logged step, evaluation,
                checkpoint, and at the start and end.
            loggers: names of registered loggers to switch on (``lipgan plugins`` lists them;
                e.g. ``"csv"``); each sees what a callback sees.
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
        from lipgan.run.progress import for_verbose

        check_int(steps, "steps", minimum=1)
        check_bool(force, "force")
        if progress is None or progress is False:
            progress = for_verbose(0 if progress is False else verbose)
        if self.intervals.eval_every:
            evaluation.check_num_samples(
                self.data_factory, self.wgan.data_shape, self.intervals.eval_samples
            )
        settings = self.settings()
        loggers = make_loggers(loggers, run_dir, self.chief, settings)
        callbacks = [progress, *callbacks]  # progress first: its lines precede a callback's
        view = self.view(run_dir, settings)
        for callback in callbacks:
            callback.set_view(view)
        callbacks += loggers
        fingerprint, why = self.data_fingerprint()
        if run_dir is not None and fingerprint is None and why:
            progress.message(
                f"note: the data cannot be fingerprinted ({why}), so resuming this run dir cannot "
                "check that the data is the same"
            )
        loop = TrainingLoop(
            wgan=self.wgan,
            inputs=self.inputs,
            intervals=self.intervals,
            progress=progress,
            steps=int(steps),
            chief=self.chief,
            checkpoint_input=self.checkpoint_input,
            evaluate=self.evaluate,
            render=self.render,
            describe=lambda path, warn: description.describe(path, self, steps, warn),
            differences=lambda old, new: settings_differences(old, new, self.spec.plugin_classes()),
            digest=settings_digest,
            callbacks=callbacks,
        )
        return loop.fit(run_dir, force=force, settings=settings)

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
        from lipgan.run.checkpoint import RunCheckpoint

        checkpoint = RunCheckpoint(run_dir, self.wgan, training=False)
        if not checkpoint.available():
            raise CheckpointError(
                f"no checkpoint in {Path(run_dir) / 'checkpoints'}; train first with "
                f"`lipgan run --run-dir {run_dir}`"
            )
        return checkpoint.restore(warn)

    def generator_model(self, which: str | None = None):
        """The generator ``which`` names: ``"raw"`` (the trained generator), ``"ema"`` (its
        average, the first decay's; refused in one line when the run has none), ``"ema:0.99"``
        (the average at that decay of ``train.ema_decay``; refused in one line when the run
        keeps none at it) or None/``"default"``: the one that samples and evaluates by default,
        the (first) EMA when ``train.ema_decay`` is on."""
        from lipgan.core.step_config import generator_named

        return generator_named(self.wgan, which)

    def sampler(self, which: str | None = None) -> Sampler:
        """The :class:`lipgan.core.callbacks.Sampler` of :meth:`generator_model` ``which``: what
        :func:`lipgan.metrics.evaluation.generate` and :func:`lipgan.metrics.evaluation.evaluate` draw from."""
        return Sampler(self.generator_model(which), tuple(self.wgan.latent_shape))

    def view(self, run_dir=None, settings: dict | None = None) -> FitView:
        """The :class:`lipgan.core.callbacks.FitView` a callback of :meth:`fit` gets: the models, the
        sampler, the data, the spec, the run dir and whether this process is the chief."""
        wgan = self.wgan
        return FitView(
            run_dir=Path(run_dir) if run_dir is not None else None,
            chief=self.chief,
            settings=settings if settings is not None else self.settings(),
            critic=wgan.critic,
            generator=wgan.generator,
            generator_ema=wgan.generator_ema,
            generator_emas=dict(getattr(wgan, "generator_emas", {})),
            sampler=self.sampler(),
            data=self.data_factory,
            data_shape=tuple(wgan.data_shape),
            seed=self.seed,
            spec=self.spec,
        )

    def evaluate(self, num_samples: int | None = None, metrics=None, generator=None) -> dict:
        """The metrics that apply to this data (``lipgan eval``'s), as ``{'eval/...': float}``: the
        critic's estimate always; on data lipgan has no metric for, W1 to the data with its
        real-vs-real floor (:func:`lipgan.metrics.evaluation.data_w1`).

        Args:
            num_samples: generated (and real) samples to evaluate on, >= 2; default
                ``intervals.eval_samples``.
            metrics: names of registered metrics to compute (``lipgan plugins`` lists them);
                default: every default metric that applies to the data.
            generator: ``"raw"``, ``"ema"``, ``"ema:<decay>"`` or None (the default sampler):
                see :meth:`generator_model`.

        Returns:
            ``{'eval/<metric>': float}`` (docs/metrics.md says what each means).
        """
        return evaluation.evaluate(
            self.sampler(generator),
            self.data_factory,
            critic=self.critic,
            seed=self.seed,
            batch_size=self.global_batch_size,
            num_samples=self.intervals.eval_samples if num_samples is None else num_samples,
            inception_weights=self.inception_weights,
            metrics=None if metrics is None else tuple(metrics),
        )

    def audit(self, points: int = 512, seed: int | None = None, generator=None) -> dict:
        """Lower and certified upper bounds on the critic's Lipschitz constant (``lipgan audit``'s
        result, :func:`lipgan.metrics.audit.audit`) at ``points`` real, generated and interpolated
        points each, drawn with ``seed`` (default: the run's).

        Args:
            points: real, generated and interpolated points each, >= 1.
            seed: the seed of the points' draw; None uses the run's.
            generator: which generator draws the fake points (:meth:`generator_model`).

        Returns:
            The audit as a dict: ``lower_bound`` (the largest per-example Jacobian norm, also per
            point set), mean Jacobian norms, and ``upper_bound``, a guaranteed bound with its
            source (None where none is known), as :func:`lipgan.metrics.audit.audit` returns them.
        """
        from lipgan.metrics.audit import audit

        if isinstance(points, bool) or not isinstance(points, (int, np.integer)) or points < 1:
            raise ConfigError(f"audit(points={points!r}): points must be an integer >= 1")
        seed = self.seed if seed is None else seed
        real = evaluation.real_samples(self.data_factory, points, self.global_batch_size, seed)
        return audit(self, real, self.sample(points, seed, generator), seed=seed)

    def sample(self, n: int, seed: int | None = None, generator=None) -> np.ndarray:
        """``n`` generated examples from a fixed noise (the same ``seed`` gives the same samples).

        Args:
            n: how many examples.
            seed: the noise's seed; None uses the run's.
            generator: ``"raw"``, ``"ema"``, ``"ema:<decay>"`` or None (the default sampler):
                :meth:`generator_model`.

        Returns:
            A ``[n, *data_shape]`` float32 array.
        """
        seed = self.seed if seed is None else seed
        return evaluation.generate(self.sampler(generator), n, seed)

    def render(self, n: int) -> bytes | None:
        """A PNG of ``n`` samples (2-D: over the critic's contour, with real points; images: a grid).

        Args:
            n: how many samples to draw.

        Returns:
            The PNG's bytes, or None where the data has no picture.
        """
        real = None
        if self.wgan.data_shape == (2,):
            real = evaluation.real_samples(self.data_factory, n, self.global_batch_size, self.seed)
        return evaluation.render(self.critic, self.sample(n), real, title=f"step {self.step}")


Trainer.__init__.__signature__ = inspect.Signature(
    [
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        *(
            inspect.Parameter(
                f.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default,
                annotation=f.type,
            )
            for f in dataclasses.fields(RunSpec)
        ),
    ]
)
