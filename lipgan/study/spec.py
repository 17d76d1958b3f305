"""What a study runs: the grid (constraint × seed × data set) and how each cell becomes a lipgan run.

A cell is an ordinary lipgan run: a shipped gin config for its data set (:data:`DATASETS`, or for
a data set the user brings, the config of its kind: :mod:`lipgan.study.own_data`), plus the
bindings that choose the constraint (``--constraint`` SPEC, parsed by
:func:`lipgan.core.plugin_spec.parse_spec`, the syntax of ``lipgan bench``), the seed and the number of iterations.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from lipgan.core.compare import differences
from lipgan.core.errors import ConfigError

#: Data set name on the command line -> (shipped gin config, ``dataset.name`` binding or None).
#: ``ring`` and ``grid`` are PacGAN's 2D-ring and 2D-grid (Lin et al. 2018), evaluated by its protocol.
DATASETS = {
    "8gaussians": ("wgangp_toy_quick.gin", "lipgan_toy/8gaussians"),
    "25gaussians": ("wgangp_toy_quick.gin", "lipgan_toy/25gaussians"),
    "swissroll": ("wgangp_toy_quick.gin", "lipgan_toy/swissroll"),
    "ring": ("wgangp_ring.gin", "lipgan_toy/2d_ring"),
    "grid": ("wgangp_grid.gin", "lipgan_toy/2d_grid"),
    "digits": ("wgangp_digits.gin", None),
    "cifar10": ("wgangp_cifar10.gin", None),
}

#: ``train.steps`` of each shipped config a study trains with (:data:`DATASETS`' and, for a data
#: set the user brings, :data:`lipgan.study.own_data.CONFIGS`): a cell's iterations unless
#: ``--steps`` says otherwise. Written here so that the study reads no gin (tests/test_study.py
#: checks each against the config's own binding).
CONFIG_STEPS = {
    "wgangp_toy_quick.gin": 1000,
    "wgangp_ring.gin": 4000,
    "wgangp_grid.gin": 4000,
    "wgangp_digits.gin": 800,
    "wgangp_cifar10.gin": 100000,
}

#: The image scores a study records on an image data set's rows unless ``--metric`` names others:
#: the digits classifier's FD/KID (offline), and on CIFAR-10 the papers' FID, IS, KID and PRDC on
#: FID's own Inception network (plugins/metrics.py; its weights must be here before training).
IMAGE_METRICS = {"digits": ("digits",), "cifar10": ("fid", "is", "kid", "prdc")}

#: Where a constraint's paper prescribes its own optimizer, its cells use it instead of the data
#: set config's Adam: weight clipping with RMSProp(5e-5) for both networks (Arjovsky et al. 2017,
#: Algorithm 1, as in gan_toy.py's WGAN mode and wgan_clip_toy.gin). ``--bind`` still wins.
PAPER_OPTIMIZERS = {
    "weight_clip": (
        "train.critic_optimizer = @critic/RMSprop",
        "train.generator_optimizer = @generator/RMSprop",
        "critic/RMSprop.learning_rate = 5e-5",
        "generator/RMSprop.learning_rate = 5e-5",
    ),
}

#: ``--quick``: the grid a test can afford (a few minutes on 2 idle cores). A smoke test of the
#: machinery, labelled so in its report: 100 iterations have learned nothing worth comparing.
QUICK = {"seeds": 2, "steps": 100, "datasets": ["8gaussians"], "eval_every": 50}

#: Iterations between two points of a cell's quality curve (``--eval-every``; 0 = no curve).
EVAL_EVERY = 250

#: The PacGAN protocol: 2,500 generated samples per evaluation (Lin et al. 2018, Table 1).
EVAL_SAMPLES = 2500


@dataclasses.dataclass(frozen=True)
class StudySpec:
    """The whole grid; two studies with equal specs are the same study (resume compares them).

    ``steps=None`` trains every data set for its own config's ``train.steps`` (the budget the
    config was written for: 4,000 for ring and grid); ``eval_every`` is the curve's interval;
    ``smoke_test`` marks a ``--quick`` study, whose report says it holds no results.
    """

    constraints: tuple[str, ...]
    datasets: tuple[str, ...]
    seeds: int
    steps: int | None = None
    eval_samples: int = EVAL_SAMPLES
    bindings: tuple[str, ...] = ()
    eval_every: int = EVAL_EVERY
    smoke_test: bool = False
    #: ``--metric``: the scores recorded on the image data sets' rows (none: :data:`IMAGE_METRICS`).
    metrics: tuple[str, ...] = ()
    #: The data sets the user brought (:class:`lipgan.study.own_data.OwnData`), each also named
    #: in ``datasets``; left out of :meth:`as_dict` when empty, so older studies still resume.
    data: tuple = ()

    def as_dict(self) -> dict:
        d = {k: list(v) if isinstance(v, tuple) else v for k, v in vars(self).items()}
        if not self.metrics:  # as recorded before --metric existed: the same study resumes
            del d["metrics"]
        d["data"] = [own.as_dict() for own in self.data]
        if not self.data:
            del d["data"]
        return d

    def cells(self) -> list[Cell]:
        return [
            Cell(
                dataset,
                constraint,
                seed,
                self.steps or default_steps(dataset, self.data),
                self.eval_samples,
                self.bindings,
                self.eval_every,
                metrics=self.metrics if dataset in IMAGE_METRICS else (),
            )
            for dataset in self.datasets
            for constraint in self.constraints
            for seed in range(self.seeds)
        ]


@dataclasses.dataclass(frozen=True)
class Cell:
    dataset: str
    constraint: str
    seed: int
    steps: int
    eval_samples: int
    bindings: tuple[str, ...] = ()
    eval_every: int = 0
    #: A tuned study's search trial: the index of the sampled config (lipgan.study.search); its
    #: run dir is named after it instead of the seed. None (a study's cell) is left out of
    #: :meth:`as_dict`, so the results recorded before it existed still match their cells.
    trial: int | None = None
    #: A successive-halving trial's seed index (lipgan.study.halving): config ``trial`` runs once
    #: per index, each in its own run dir. None, as ``trial``, is left out of :meth:`as_dict`.
    trial_seed: int | None = None
    #: The study's ``--metric`` names on an image data set (:func:`image_metrics`); () is left
    #: out of :meth:`as_dict`, as ``trial``.
    metrics: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """A run-dir name: the SPEC with characters a path should not hold replaced."""
        safe = "".join(c if c.isalnum() or c in "._=-" else "_" for c in self.constraint)
        leaf = f"config{self.trial:02d}" if self.trial is not None else f"seed{self.seed}"
        if self.trial_seed is not None:
            leaf += f"-seed{self.trial_seed}"
        return f"{self.dataset}/{safe}/{leaf}"

    @classmethod
    def from_dict(cls, d: dict) -> Cell:
        return cls(
            **{
                **d,
                "bindings": tuple(d.get("bindings", ())),
                "metrics": tuple(d.get("metrics", ())),
            }
        )

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["bindings"] = list(self.bindings)
        d["metrics"] = list(self.metrics)
        for optional in ("trial", "trial_seed"):
            if d[optional] is None:
                del d[optional]
        if not self.metrics:
            del d["metrics"]
        return d

    def continues(self, recorded: dict) -> bool:
        """Whether this cell trains on in the run dir of ``recorded`` (a cell's dict): a
        successive-halving trial promoted to a later rung is the same run to more iterations, its
        decay bound over the full budget from the start (:mod:`lipgan.study.halving`). Any other
        cell with other steps is another run (a shorter run's decay was stretched to its steps)."""
        if self.trial_seed is None or not isinstance(recorded, dict):
            return False
        steps = recorded.get("steps")
        same = not differences(recorded, self.as_dict(), ignore=("steps",))
        return same and isinstance(steps, int) and steps < self.steps

    def differences(self, recorded) -> list[str]:
        """How a recorded cell (its ``cell.json``, ``result.json["cell"]``) differs from this
        one, by the one comparison of runs (:func:`lipgan.run.spec.differences`); [] when it is
        this cell."""
        if not isinstance(recorded, dict):
            return [f"not a cell: a JSON {type(recorded).__name__}"]
        return differences(recorded, self.as_dict())

    def gin(self, data_dir=None) -> tuple[list[str], list[str]]:
        """(gin files, bindings) of this cell's run; ``data_dir``: where a user data set's frozen
        copy is (default: ``$LIPGAN_STUDY_DATA``, set for a cell by the runner)."""
        if self.dataset in DATASETS:
            config, dataset_name = DATASETS[self.dataset]
            data_bindings = []
        else:  # a user data set: its study's frozen copy says which config (own_data)
            from lipgan.study.own_data import cell_config

            (config, data_bindings), dataset_name = cell_config(self.dataset, data_dir), None
        name = self.constraint.partition(":")[0].strip()
        bindings = [f"train.constraint = @{name}()", *PAPER_OPTIMIZERS.get(name, ())]
        bindings += row_parameters(self.constraint)
        if dataset_name:
            bindings.append(f"dataset.name = {dataset_name!r}")
        bindings += data_bindings
        bindings += [f"train.seed = {self.seed}", f"train.steps = {self.steps}"]
        # The config's own periodic evaluation (exact W1 and a sample image every
        # train.eval_every) is replaced by the cell's cheaper curve (lipgan.study.curve); it
        # changes no step. --bind still wins.
        bindings.append("train.eval_every = 0")
        return [config], bindings + list(self.bindings)


def row_parameters(constraint: str) -> list[str]:
    """The gin bindings of a row spec's ``key=value`` parameters (``name:key=value,...``), in its
    order: a plain key sets the constraint's own parameter, a dotted key is a whole binding
    (``bjorck:mlp_critic.activation=maxmin`` pairs the construction with its activation). A cell
    passes them before the study's ``--bind``s (:meth:`Cell.gin`)."""
    from lipgan.core.plugin_spec import parse_spec

    name, kwargs = parse_spec(constraint)
    return [
        f"{key if '.' in key else f'{name}.{key}'} = {value!r}" for key, value in kwargs.items()
    ]


def toy_set(dataset: str) -> str | None:
    """The lipgan toy set behind a study data set (``ring`` -> ``2d_ring``), None for images."""
    from lipgan.data.toy import SAMPLERS

    name = DATASETS.get(dataset, (None, None))[1] or ""
    toy = name.split("/")[-1]
    return toy if name.startswith("lipgan_toy/") and toy in SAMPLERS else None


def cell_dir(out: Path, cell: Cell) -> Path:
    """The run dir of ``cell`` in the study dir ``out``."""
    return out / "runs" / cell.name


def config_steps(dataset: str) -> int:
    """``train.steps`` of the data set's shipped config: a study's default budget."""
    if dataset not in DATASETS:
        raise ConfigError(f"unknown study data set {dataset!r}; known: {', '.join(DATASETS)}")
    return file_steps(DATASETS[dataset][0])


def file_steps(config_file: str) -> int:
    """``train.steps`` of a shipped config a study uses (:data:`CONFIG_STEPS`)."""
    return CONFIG_STEPS[config_file]


def default_steps(dataset: str, data: tuple = ()) -> int:
    """A data set's default budget: its config's ``train.steps``, for a user data set (one of
    ``data``) the config of its kind (:data:`lipgan.study.own_data.CONFIGS`)."""
    for own in data:
        if own.name == dataset:
            return file_steps(own.config)
    return config_steps(dataset)


def default_constraints(registry) -> list[str]:
    """Every registered constraint except ``none`` (built-ins and installed plugins alike).

    A construction that names a ``recommended_activation`` (bjorck and aol: MaxMin) is paired with
    it on the shipped critics, as its paper trains it.
    """
    specs = []
    for name in registry.names("constraint"):
        if name == "none":
            continue
        activation = getattr(registry.get("constraint", name), "recommended_activation", None)
        specs.append(
            f"{name}:mlp_critic.activation={activation},dcgan_critic.activation={activation}"
            if activation
            else name
        )
    return specs


def check_spec(spec: StudySpec) -> None:
    from lipgan.core.plugin_spec import parse_spec

    if spec.seeds < 1 or (spec.steps is not None and spec.steps < 1) or spec.eval_samples < 2:
        raise ConfigError("--seeds and --steps must be >= 1")
    if spec.eval_every < 0:
        raise ConfigError("--eval-every must be >= 0 (0: no quality curve)")
    if not spec.constraints or not spec.datasets:
        raise ConfigError("a study needs at least one constraint and one data set")
    for c in spec.constraints:
        parse_spec(c)  # one-line error on a malformed SPEC
    check_datasets(spec.datasets, spec.data)


def check_datasets(datasets, data: tuple = ()) -> None:
    """One line for a data set that is neither a named one nor one the user brought."""
    own = {o.name for o in data}
    for d in datasets:
        if d not in DATASETS and d not in own:
            raise ConfigError(
                f"unknown study data set {d!r}; known: {', '.join(DATASETS)}, or a .npy/.npz "
                'file of your own (docs/study.md, "Your own data")'
            )


def image_metrics(dataset: str, chosen=()) -> tuple[str, ...]:
    """The scores recorded on ``dataset``'s rows beside the default metrics: ``chosen``
    (``--metric``) or :data:`IMAGE_METRICS`; () for a data set of points."""
    if dataset not in IMAGE_METRICS:
        return ()
    return tuple(chosen) or IMAGE_METRICS[dataset]


def check_metrics(chosen, datasets, registry) -> None:
    """Refuse, in one line and before any cell trains, a ``--metric`` that is not registered or
    does not apply to images, ``--metric`` on a study without image data, and a metric its study
    records that cannot be computed here (FID's network without its weights file: the line
    names the file and where to put it, :meth:`lipgan.core.metric.Metric.check_ready`)."""
    from lipgan.core.metric import EvalData

    names = registry.names("metric")
    for name in chosen:
        if name not in names:
            raise ConfigError(
                f"unknown metric {name!r}; registered: {', '.join(names)} (`lipgan plugins`)"
            )
    images = [d for d in datasets if d in IMAGE_METRICS]
    if chosen and not images:
        raise ConfigError(
            f"--metric chooses the scores of image data sets ({', '.join(IMAGE_METRICS)}); this "
            "study has none (the point sets' metrics are fixed: docs/metrics.md)"
        )
    for dataset in images:
        shape = (16, 16, 1) if dataset == "digits" else (32, 32, 3)
        probe = EvalData(np.zeros((0, *shape)), np.zeros((0, *shape)), data_shape=shape)
        probe.digits = dataset == "digits"
        for name in image_metrics(dataset, chosen):
            metric = registry.get("metric", name)()
            if not metric.applies(probe):
                raise ConfigError(
                    f"metric {name!r} does not apply to {dataset}'s images; pass another --metric"
                )
            metric.check_ready()


def score_key(dataset: str, chosen, registry) -> str | None:
    """What a tuned study's search ranks ``dataset``'s trials by, lower is better
    (:func:`lipgan.study.search.score`): the first of its image metrics' (:func:`image_metrics`)
    :attr:`~lipgan.core.metric.Metric.score_key`, the digits classifier's ``digits_fd`` on
    digits and ``fid`` on CIFAR-10 unless ``--metric`` says; None on a point set."""
    names = image_metrics(dataset, chosen)
    return registry.get("metric", names[0]).score_key if names else None


def check_ranked(chosen, datasets, registry) -> None:
    """One line when an image data set's first metric has no value a search can rank by (IS,
    higher is better; PRDC's four values), naming the metrics that have one."""
    for dataset in datasets:
        if image_metrics(dataset, chosen) and not score_key(dataset, chosen, registry):
            first = image_metrics(dataset, chosen)[0]
            ranked = [n for n in registry.names("metric") if registry.get("metric", n).score_key]
            raise ConfigError(
                f"metric {first!r} has no lower-is-better value to rank {dataset}'s search by; "
                f"put first a --metric that has: {', '.join(ranked)}"
            )


def dumps(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, default=float)
