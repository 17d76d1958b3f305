"""``lipgan tune``: each constraint at its own best, then over seeds (Lucic et al. 2018's protocol).

A study that shares one config across constraints measures that config, not the methods: the
shipped ring and grid configs were tuned for the gradient penalty. A tuned study gives every
constraint the same search instead:

1. **search**: per (data set, constraint), ``configs`` configurations drawn from the constraint's
   ranges (:mod:`lipgan.study.search`), each trained once at a reduced budget (``search_steps``
   iterations, learning-rate decay stretched to it) with its own seed (``SEARCH_SEED + k``, or
   ``--search-seed`` + k: a re-search with other seeds into another ``--out``);
2. **selection**: the config whose final sample is nearest the data in exact W1 (:func:`score`;
   ties: higher high quality, then lower reverse KL); on an image data set the one with the lowest
   value of its first image metric (``--metric``; FID on CIFAR-10, the digits classifier's FD on
   digits: :meth:`TuneSpec.score_key`); a failed trial (NaN) scores nothing;
3. **replicates**: the chosen config at the full budget (each data set config's ``train.steps``)
   over ``seeds`` fresh seeds 0, 1, ... (never a search seed, so the selection's luck does not
   carry over), with a generator EMA (``train.ema_decay``) whose raw generator is measured in the
   same run, so the "+EMA" rows and the plain rows come from the same trainings; with several
   decays (``--ema-decays``) every one is measured in the same runs and the report chooses the
   decay by the search's score (:mod:`lipgan.study.ema_choice`).

Layout of a tuned study dir::

    OUT/spec.json                                  the TuneSpec
    OUT/search/runs/<data set>/<SPEC>/config<k>/   one run dir per search trial
    OUT/chosen.json                                the chosen config per (data set, constraint)
    OUT/final/runs/<data set>/<SPEC>/seed<s>/      one run dir per replicate
    OUT/tune.md, tune.json, tune.png               the report (lipgan.study.tune_report)

Every trial and replicate is an ordinary study cell (:mod:`lipgan.study.cell`), run by any study
executor (a local pool, Ray tasks, or Ray Tune: :mod:`lipgan.study.tune_executor`); re-running the
same command resumes, since a cell is finished when its ``result.json`` records the same cell.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

from lipgan.core.errors import ConfigError
from lipgan.study import search
from lipgan.study.row_bench import BENCH_FILE
from lipgan.study.search import score
from lipgan.study.spec import EVAL_EVERY, EVAL_SAMPLES, IMAGE_METRICS, Cell, default_steps, dumps

#: Search trial k trains with seed SEARCH_SEED + k; replicates use seeds 0, 1, ...
SEARCH_SEED = 1000

#: The replicates' generator EMA: an average over about the last 1,000 iterations (BigGAN and
#: StudioGAN average too; 0.999 suits a 4,000-iteration budget), started after the first quarter
#: of it, when the weights are past their random start (StudioGAN's ``ema_start``).
EMA_DECAY = 0.999
EMA_START = 1000

#: Data sets whose shipped config trains with Adam and linear decay (parts/adam_linear_decay.gin),
#: the optimizer settings a search config binds (:func:`lipgan.study.search.bindings`).
TUNABLE_DATASETS = ("ring", "grid", "8gaussians", "25gaussians", "swissroll", "cifar10")

#: Data sets whose shipped config holds Adam's rate constant (wgangp_digits.gin): a search config
#: binds that rate (``schedule="constant"`` of :func:`lipgan.study.search.bindings`).
CONSTANT_RATE_DATASETS = ("digits",)


@dataclasses.dataclass(frozen=True)
class TuneSpec:
    """The whole tuned study; equal specs are the same study (resume compares them)."""

    constraints: tuple[str, ...]
    datasets: tuple[str, ...] = ("ring", "grid")
    configs: int = 20
    search_steps: int = 1000
    seeds: int = 5
    steps: int | None = None
    eval_every: int = EVAL_EVERY
    eval_samples: int = EVAL_SAMPLES
    #: One decay, or a tuple (``--ema-decays``): one averaged copy per decay in every replicate.
    ema_decay: float | tuple[float, ...] = EMA_DECAY
    ema_start: int = EMA_START
    #: Extra gin bindings for every run (``--bind``), after the config's: they win.
    bindings: tuple[str, ...] = ()
    #: ``random``: one run per config at ``search_steps`` (Lucic et al.); ``halving``: successive
    #: halving to the full budget (:mod:`lipgan.study.halving`; ``search_steps`` unused).
    search: str = "random"
    #: Successive halving's η, rungs and seeds per config at every rung.
    eta: int = 3
    rungs: int = 3
    search_seeds: int = 2
    #: The base of the search trials' seeds (``--search-seed``); None: the search's own
    #: (:data:`SEARCH_SEED`, :data:`lipgan.study.halving.HALVING_SEED`).
    search_seed: int | None = None
    #: Data sets the user brought (:mod:`lipgan.study.own_data`), also named in ``datasets``.
    data: tuple = ()
    #: ``--metric``: the scores of the image data sets' rows, the first ranking the search (none:
    #: :data:`lipgan.study.spec.IMAGE_METRICS`); left out of :meth:`as_dict` when empty.
    metrics: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        d = {k: list(v) if isinstance(v, tuple) else v for k, v in vars(self).items()}
        if not self.metrics:  # as recorded before --metric existed: the same study resumes
            del d["metrics"]
        d["data"] = [own.as_dict() for own in self.data]
        if not self.data:  # as recorded before own data existed
            del d["data"]
        if not self.bindings:  # as recorded before --bind existed: the same study resumes
            del d["bindings"]
        if self.search_seed is None:  # as recorded before --search-seed existed
            del d["search_seed"]
        if self.search == "random":  # as recorded before halving existed
            for key in ("search", "eta", "rungs", "search_seeds"):
                del d[key]
        return {"kind": "tune", **d}

    @property
    def halving(self):
        from lipgan.study.halving import Halving

        return Halving(self.eta, self.rungs, self.search_seeds)

    def check(self) -> None:
        from lipgan.core.plugin_spec import parse_spec

        if min(self.configs, self.search_steps, self.seeds) < 1 or (
            self.steps is not None and self.steps < 1
        ):
            raise ConfigError("--configs, --search-steps, --seeds and --steps must be >= 1")
        if not self.constraints or not self.datasets:
            raise ConfigError("a tuned study needs at least one constraint and one data set")
        if self.search not in ("random", "halving"):
            raise ConfigError(f"--search must be random or halving, not {self.search!r}")
        self.halving.check()
        check_ema_decays(self.ema_decay)
        if self.search_seed is not None and self.search_seed < self.seeds:
            raise ConfigError(
                f"--search-seed {self.search_seed} must be >= --seeds ({self.seeds}): the "
                "replicates train with seeds 0, 1, ..., which no search trial may share"
            )
        for constraint in self.constraints:
            search.space(parse_spec(constraint)[0])  # one line for a constraint with no space
        own = {o.name: o for o in self.data}
        for dataset in self.datasets:
            if dataset in own and own[dataset].kind != "vectors":
                raise ConfigError(
                    f"a tuned study searches the Adam and linear decay of the toy MLP config; "
                    f"{dataset} holds images (DCGAN, plain Adam): study it with lipgan study"
                )
            tunable = TUNABLE_DATASETS + CONSTANT_RATE_DATASETS
            if dataset not in tunable and dataset not in own:
                raise ConfigError(
                    f"a tuned study runs on the data sets whose configs' Adam it binds "
                    f"({', '.join(tunable)}); not on {dataset!r}"
                )
        self.check_metrics()

    def check_metrics(self) -> None:
        """One line for a ``--metric`` a study refuses (:func:`lipgan.study.spec.check_metrics`)
        or, first, one that cannot rank a search (:func:`lipgan.study.spec.check_ranked`)."""
        from lipgan.study.spec import check_metrics, check_ranked

        if self.metrics or any(d in IMAGE_METRICS for d in self.datasets):  # else: no registry
            check_metrics(self.metrics, self.datasets, search._default_registry())
            check_ranked(self.metrics, self.datasets, search._default_registry())

    def score_key(self, dataset: str) -> str | None:
        """What the search ranks ``dataset``'s trials by (:func:`lipgan.study.spec.score_key`)."""
        from lipgan.study.spec import image_metrics, score_key

        if not image_metrics(dataset, self.metrics):
            return None  # a point set: exact W1, then high quality, then reverse KL
        return score_key(dataset, self.metrics, search._default_registry())

    def cell_metrics(self, dataset: str) -> tuple[str, ...]:
        """A cell's ``metrics`` on ``dataset``: ``--metric`` on an image data set, as a study's."""
        return self.metrics if dataset in IMAGE_METRICS else ()

    def search_bindings(self, dataset: str, name: str, config: dict, steps: int) -> tuple:
        """:func:`lipgan.study.search.bindings` for ``dataset``'s config's learning-rate schedule."""
        schedule = "constant" if dataset in CONSTANT_RATE_DATASETS else "linear_decay"
        return search.bindings(name, config, steps, schedule=schedule)

    def full_steps(self, dataset: str) -> int:
        return self.steps or default_steps(dataset, self.data)

    @property
    def ema_decays(self) -> tuple[float, ...]:
        """The replicates' EMA decays, the sampling one first."""
        return tuple(self.ema_decay) if isinstance(self.ema_decay, tuple) else (self.ema_decay,)

    def seed_base(self, default: int) -> int:
        """The first search seed: ``--search-seed``, else the search's own ``default``."""
        return default if self.search_seed is None else self.search_seed


def check_ema_decays(value) -> None:
    """The spec's decays: what ``train.ema_decay`` takes, but never 0 (the replicates' EMA is
    what the +EMA rows measure)."""
    from lipgan.core.step_config import check_ema_decay

    try:
        check_ema_decay(value)
    except ConfigError:
        value = None
    if value in (None, 0, 0.0):
        raise ConfigError(
            "--ema-decays takes decays in (0, 1), distinct, comma-separated (e.g. "
            "0.99,0.999,0.9999); the first samples"
        ) from None


def parse_ema_decays(text: str) -> float | tuple[float, ...]:
    """``--ema-decays 0.99,0.999``: one decay as a float (as the spec has always held it), several
    as a tuple, the first sampling. Raises :class:`ConfigError` in one line."""
    try:
        decays = tuple(float(part) for part in text.split(","))
    except ValueError:
        decays = ()
    value = decays[0] if len(decays) == 1 else decays
    check_ema_decays(value)
    return value


def default_constraints(registry) -> list[str]:
    """Every registered constraint with a search space, as a study pairs them (bjorck and aol
    with MaxMin: :func:`lipgan.study.spec.default_constraints`)."""
    from lipgan.study.spec import default_constraints as every

    names = set(search.tunable(registry)[0])
    return [c for c in every(registry) if constraint_name(c) in names]


def left_out(registry) -> list[str]:
    """One line per registered constraint a default tune leaves out, naming its plugin and why,
    so an installed plugin's constraint is never dropped silently (``none``, the unconstrained
    baseline, is never searched and not listed)."""
    owners = {e.name: e.describe() for e in registry.entries("constraint")}
    return [
        f"tune: leaves out constraint {name!r} ({owners[name]}): {why}; declare a search_space "
        "to tune it (docs/plugins.md)"
        for name, why in search.tunable(registry)[1].items()
        if name != "none"
    ]


def constraint_name(spec: str) -> str:
    from lipgan.core.plugin_spec import parse_spec

    return parse_spec(spec)[0]


def search_cells(spec: TuneSpec) -> list[Cell]:
    """Every search trial: data set × constraint × config index."""
    cells = []
    for dataset in spec.datasets:
        for constraint in spec.constraints:
            name = constraint_name(constraint)
            for k in range(spec.configs):
                config = search.draw(name, k)
                cells.append(
                    Cell(
                        dataset,
                        constraint,
                        spec.seed_base(SEARCH_SEED) + k,
                        spec.search_steps,
                        spec.eval_samples,
                        spec.search_bindings(dataset, name, config, spec.search_steps)
                        + spec.bindings,
                        spec.eval_every,
                        trial=k,
                        metrics=spec.cell_metrics(dataset),
                    )
                )
    return cells


def choose(spec: TuneSpec, results: dict[Cell, dict]) -> dict[tuple[str, str], dict]:
    """``{(data set, constraint): {'trial', 'config', 'score'}}``: the best trial of each search
    among those finished (a trial is compared only when every one of its search finished)."""
    chosen = {}
    for cell in search_cells(spec):
        key = (cell.dataset, cell.constraint)
        s = score(results.get(cell), spec.score_key(cell.dataset))
        if key not in chosen or s > chosen[key]["score"]:
            chosen[key] = {
                "trial": cell.trial,
                "config": search.draw(constraint_name(cell.constraint), cell.trial),
                "score": s,
            }
    return chosen


def replicate_cells(spec: TuneSpec, chosen: dict[tuple[str, str], dict]) -> list[Cell]:
    """The chosen config of each (data set, constraint) at the full budget over ``seeds`` seeds."""
    cells = []
    for dataset in spec.datasets:
        steps = spec.full_steps(dataset)
        for constraint in spec.constraints:
            config = chosen[(dataset, constraint)]["config"]
            bindings = spec.search_bindings(dataset, constraint_name(constraint), config, steps)
            bindings += (
                f"train.ema_decay = {spec.ema_decay!r}",  # a tuple binds as a gin tuple
                f"train.ema_start = {spec.ema_start}",
                *spec.bindings,
            )
            for seed in range(spec.seeds):
                cells.append(
                    Cell(
                        dataset,
                        constraint,
                        seed,
                        steps,
                        spec.eval_samples,
                        bindings,
                        spec.eval_every,
                        metrics=spec.cell_metrics(dataset),
                    )
                )
    return cells


def write_chosen(out: Path, chosen: dict) -> None:
    rows = [
        {
            "dataset": d,
            "constraint": c,
            "trial": v["trial"],
            "config": v["config"],
            "described": search.describe(v["config"]),
            "search_score": list(v["score"]),
        }
        for (d, c), v in chosen.items()
    ]
    tmp = out / "chosen.json.tmp"
    tmp.write_text(dumps(rows))
    tmp.replace(out / "chosen.json")


def _check_out(out: Path, spec: TuneSpec, force: bool) -> None:
    from lipgan.study.runner import _check_out as check_study_out

    check_study_out(out, spec, force)


def finished(cells: list[Cell], out: Path) -> dict[Cell, dict]:
    from lipgan.study.runner import results_of

    return results_of(out, cells)  # a result.json that holds no result: a warning line


@dataclasses.dataclass
class TuneReport:
    spec: TuneSpec
    search: dict[Cell, dict]
    final: dict[Cell, dict]
    chosen: dict
    paths: dict[str, Path]


def run_tune(
    spec: TuneSpec,
    out: str | Path,
    *,
    executor=None,
    threads: int | None = None,
    force: bool = False,
    log: Callable[[str], None] | None = None,
    command: str = "",
    report_only: bool = False,
    bench: dict | None = None,
    shared: tuple = (),
    data=None,
    data_name: str | None = None,
    modes=None,
    mode_std: float | None = None,
    data_key: str | None = None,
) -> TuneReport:
    """Run (or resume) the search, choose, run the replicates, and write the report.

    ``executor`` runs the cells (default: a local pool, one cell per core). ``report_only`` runs
    nothing and reports what has finished (a study still under way says so). ``bench`` is the
    quiet side-by-side timing of the chosen rows (:mod:`lipgan.study.row_bench`), when measured.
    ``shared``: dirs of shared-config studies whose rows the report prints beside the tuned ones.
    ``data`` (and ``data_name``, ``modes``, ``mode_std``, ``data_key``): data sets of your own,
    vectors only (:func:`lipgan.study.own_data.attach`, as :func:`lipgan.study.run_study`).
    """
    from lipgan.study import own_data, runner, tune_report
    from lipgan.study.executors import LocalExecutor

    spec, loaded = own_data.attach(
        spec, data, name=data_name, modes=modes, mode_std=mode_std, data_key=data_key
    )
    spec.check()
    out = Path(out)
    log = log or (lambda line: None)
    executor = executor or LocalExecutor(runner.default_jobs()[0])
    if report_only:
        runner.check_out_dir(out)  # the report is written there
    else:
        _check_out(out, spec, force)
        # search/ and final/ run their cells from their own dirs; Ray's storage is where they run.
        where = [out, out / "search", out / "final", getattr(executor, "storage", None)]
        own_data.freezer(loaded, where)()

    def run_or_read(cells: list[Cell], where: Path, what: str) -> dict[Cell, dict]:
        if report_only:
            return finished(cells, where)
        log(what)
        return runner.execute(cells, where, executor=executor, threads=threads, log=log)

    if spec.search == "halving":
        from lipgan.study import halving

        state = halving.run_search(spec, spec.halving, out, run_or_read, report_only)
        chosen, complete, progress = state.chosen, state.complete, state.progress
        searched = halving.first_rung_as_search(state.rungs[0])
    else:
        trials = search_cells(spec)
        searched = run_or_read(
            trials, out / "search", f"search: {len(trials)} trials ({spec.configs} configs per "
            "data set and constraint)",
        )  # fmt: skip
        chosen = choose(spec, searched)
        complete, progress = len(searched) == len(trials), None
    final: dict[Cell, dict] = {}
    if complete:
        write_chosen(out, chosen)
        replicates = replicate_cells(spec, chosen)
        final = run_or_read(
            replicates, out / "final",
            f"replicates: {len(replicates)} runs ({spec.seeds} seeds per chosen config)",
        )  # fmt: skip
    elif not searched and spec.search == "random":
        raise ConfigError(
            f"{out} holds no finished trial of this tuned study yet: nothing to report"
        )
    bench = bench if bench is not None else load_bench(out)
    paths = tune_report.write(
        out, spec, searched, chosen, final, command, log, bench, shared, progress
    )
    return TuneReport(spec, searched, final, chosen, paths)


def load_bench(out: Path) -> dict | None:
    try:
        return json.loads((Path(out) / BENCH_FILE).read_text())
    except (OSError, ValueError):
        return None
