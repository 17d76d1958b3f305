"""Successive halving: a full-budget search at a fraction of an exhaustive search's cost.

Jamieson & Talwalkar, "Non-stochastic best arm identification and hyperparameter optimization"
(AISTATS 2016), the inner loop of Hyperband (Li et al., JMLR 2018) with ASHA's rungs (Li et al.,
"A system for massively parallel hyperparameter tuning", MLSys 2020), run synchronously so that the
choice is the same on every executor: all K configs of a search start, each at ``seeds`` seeds; at
rung i every running config has trained ``budgets[i]`` iterations; the best ``ceil(n / eta)`` by
their seeds' mean score (:func:`lipgan.study.search.score`: exact W1, then high quality, then reverse
KL) go on to the next rung, **continuing their runs** (the same run dirs, resumed), and the last
rung is the full budget. Every trial's learning-rate decay spans the full budget from the start,
so a config's run at a rung is the prefix of its full-budget run, not a shorter run of its own: a
config is judged at rung i as it will be at the end, only earlier.

With K = 20, η = 3, three rungs and 2 seeds at 4,000 iterations: budgets 444, 1,333 and 4,000;
20, 7 and 3 configs; 20·2·444 + 7·2·889 + 3·2·2,667 = 46,200 iterations, against 80,000 for one
seed of every config at the full budget (58 %) or 160,000 for two (29 %).

Each finished rung is recorded in ``OUT/search/rung<i>.json`` (budget, every trial's results and
mean score, the configs promoted) before the next starts, since a promoted trial's run dir then
holds the next rung's result. A resumed search reads the finished rungs back and runs only what is
left; the choice is recomputed from the records, never from what happens to be on disk.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path

from lipgan.core.errors import ConfigError
from lipgan.core.plugin_spec import parse_spec
from lipgan.study import search
from lipgan.study.spec import Cell, dumps

#: Trial k's seed j is HALVING_SEED + 100·j + k: apart from the random search's (1000 + k) and
#: the replicates' (0, 1, ...), so neither the search's luck nor its seeds carry over;
#: ``--search-seed N`` replaces the base (N + 100·j + k) for a re-search with other seeds.
HALVING_SEED = 2000


@dataclasses.dataclass(frozen=True)
class Halving:
    """The schedule: ``rungs`` budgets, each ``eta`` times the previous, the last the full one."""

    eta: int = 3
    rungs: int = 3
    seeds: int = 2

    def check(self) -> None:
        if self.eta < 2 or self.rungs < 1 or self.seeds < 1:
            raise ConfigError("--eta must be >= 2, --rungs and --search-seeds >= 1")

    def budgets(self, full_steps: int) -> list[int]:
        """Iterations trained by the end of each rung (rounded; the last is ``full_steps``)."""
        return [
            max(1, round(full_steps / self.eta ** (self.rungs - 1 - i))) for i in range(self.rungs)
        ]

    def sizes(self, configs: int) -> list[int]:
        """Configs running at each rung: ``configs``, then ``ceil(n / eta)`` each time."""
        sizes = [configs]
        for _ in range(self.rungs - 1):
            sizes.append(max(1, math.ceil(sizes[-1] / self.eta)))
        return sizes

    def cost(self, configs: int, full_steps: int) -> int:
        """Iterations trained by the whole search of one (data set, constraint)."""
        budgets = self.budgets(full_steps)
        steps = [b - a for a, b in zip([0, *budgets], budgets)]
        return sum(n * self.seeds * s for n, s in zip(self.sizes(configs), steps))


def trial_cells(spec, halving: Halving, dataset: str, constraint: str, trial: int, steps: int):
    """Config ``trial``'s runs (one per seed) trained to ``steps``, decay over the full budget."""
    name = parse_spec(constraint)[0]
    bindings = spec.search_bindings(
        dataset, name, search.draw(name, trial), spec.full_steps(dataset)
    )
    return [
        Cell(
            dataset,
            constraint,
            spec.seed_base(HALVING_SEED) + 100 * j + trial,
            steps,
            spec.eval_samples,
            bindings + spec.bindings,
            spec.eval_every,
            trial=trial,
            trial_seed=j,
            metrics=spec.cell_metrics(dataset),
        )
        for j in range(halving.seeds)
    ]


def mean_score(results: list[dict | None], key: str | None = None) -> tuple[float, ...]:
    """The seeds' mean of :func:`lipgan.study.search.score` (with ``key``: an image data set's
    ranked value, :meth:`lipgan.study.tune.TuneSpec.score_key`), component by component; a failed
    or missing seed makes it −inf (a config that fails on one seed is not chosen).

    A seed has failed when its first component, the ranked value, is −inf: the run failed, or
    its W1 (FID, …) is missing or not finite. A later component's −inf is a result, not a
    failure: a seed whose samples cover no mode has reverse KL ∞, and its config still ranks by
    its seeds' mean W1 (the −inf then only sinks it among configs of exactly equal mean W1).
    Until 2026-12-07 any −inf component sank the config; re-scored by this rule, every committed
    rung record promotes the same configs (docs/study.md, "Successive halving")."""
    scores = [search.score(r, key) for r in results]
    if not scores or any(s[0] == -math.inf for s in scores):
        return search.score(None, key)
    return tuple(sum(c) / len(scores) for c in zip(*scores))


def best_first(trials: list[dict]) -> list[dict]:
    """A rung's trials (``{'trial', 'mean_score', ...}``) best first by their mean score; equal
    scores keep their order (the sort is stable), so a rung promotes the same configs however
    often it is re-ranked."""
    return sorted(trials, key=lambda t: tuple(t["mean_score"]), reverse=True)


def rung_path(out: Path, rung: int) -> Path:
    return Path(out) / "search" / f"rung{rung}.json"


def _read_rung(out: Path, rung: int) -> dict | None:
    try:
        return json.loads(rung_path(out, rung).read_text())
    except (OSError, ValueError):
        return None


@dataclasses.dataclass(frozen=True)
class SearchState:
    """Where a halving search stands.

    ``chosen``: per (data set, constraint), the best config of the last finished rung (``trial``,
    ``config``, ``score``: its seeds' mean there), the choice once every rung has finished.
    ``rungs``: every finished rung's record. ``progress``: None once every rung has finished;
    otherwise ``{"rung": i, "done": n, "of": m}``, the first unfinished rung (0-based) and how
    many of its runs have finished (a report made during the search says so).
    """

    chosen: dict
    rungs: list
    progress: dict | None = None

    @property
    def complete(self) -> bool:
        return self.progress is None


def _write_rung(out: Path, rung: int, record: dict) -> None:
    path = rung_path(out, rung)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(dumps(record))
    tmp.replace(path)


def run_search(
    spec,
    halving: Halving,
    out: Path,
    run_or_read: Callable[[list[Cell], Path, str], dict[Cell, dict]],
    report_only: bool = False,
) -> SearchState:
    """Run (or read back) every rung of every (data set, constraint) search.

    Returns a :class:`SearchState`. With ``report_only`` on a search past its first rung, the rungs
    recorded so far and how far the next one is: its configs lead, and are not yet chosen.
    """
    keys = [(d, c) for d in spec.datasets for c in spec.constraints]
    running = {key: list(range(spec.configs)) for key in keys}
    records: list[dict] = []
    progress = None
    for rung in range(halving.rungs):
        record = _read_rung(out, rung)
        if record is None:
            cells = {
                key: {
                    k: trial_cells(
                        spec, halving, *key, k, halving.budgets(spec.full_steps(key[0]))[rung]
                    )
                    for k in running[key]
                }
                for key in keys
            }
            every = [c for per in cells.values() for runs in per.values() for c in runs]
            results = run_or_read(
                every,
                out / "search",
                f"search, rung {rung + 1} of {halving.rungs}: {len(every)} runs",
            )
            if len(results) < len(every):  # report_only on an unfinished rung
                if not records:
                    raise ConfigError(
                        f"{out} holds no finished rung of this tuned study yet ({len(results):,} "
                        f"of its first rung's {len(every):,} runs have finished): nothing to report"
                    )
                progress = {"rung": rung, "done": len(results), "of": len(every)}
                break  # the leading configs so far
            record = {"rung": rung, "searches": []}
            for key, per in cells.items():
                trials = []
                for k, runs in per.items():
                    found = [results[c] for c in runs]
                    score = mean_score(found, spec.score_key(key[0]))
                    trials.append({"trial": k, "mean_score": list(score),
                                   "results": found})  # fmt: skip
                ranked = best_first(trials)
                keep = halving.sizes(spec.configs)[min(rung + 1, halving.rungs - 1)]
                record["searches"].append(
                    {
                        "dataset": key[0],
                        "constraint": key[1],
                        "steps": runs[0].steps,
                        "trials": trials,
                        "promoted": [t["trial"] for t in ranked[:keep]],
                    }
                )
            if not report_only:
                _write_rung(out, rung, record)
        records.append(record)
        for s in record["searches"]:
            running[(s["dataset"], s["constraint"])] = s["promoted"]
    chosen = {}
    for s in records[-1]["searches"] if records else ():
        best = max(s["trials"], key=lambda t: tuple(t["mean_score"]))
        name = parse_spec(s["constraint"])[0]
        chosen[(s["dataset"], s["constraint"])] = {
            "trial": best["trial"],
            "config": search.draw(name, best["trial"]),
            "score": tuple(best["mean_score"]),
        }
    return SearchState(chosen, records, progress)


def first_rung_as_search(record: dict) -> dict[Cell, dict]:
    """Rung 0 as the report reads a random search: one result per config (its first seed's),
    keyed by a cell that names the trial, so the search's figures show every config once."""
    out = {}
    for s in record["searches"]:
        for t in s["trials"]:
            result = t["results"][0]
            out[Cell.from_dict(result["cell"])] = result
    return out


def chosen_column(progress: dict | None) -> str:
    """The report's name for a row's config: the choice, or while the search runs (``progress``
    of :class:`SearchState`) the leader of its last finished rung, which the next may overturn."""
    if progress is None:
        return "chosen config"
    return f"leading config after rung {progress['rung']} (not yet chosen)"


def partial_line(progress: dict, rungs: int) -> str:
    """What a report made during the search says of it (``progress`` of :class:`SearchState`)."""
    r = progress["rung"]
    return (
        f"the search has finished {r} of its {rungs} rungs, and {progress['done']:,} of rung "
        f"{r + 1}'s {progress['of']:,} runs; each row's config is the leader of rung {r}, not yet "
        "the choice at the full budget"
    )


def protocol(spec) -> str:
    """The report's protocol clause for the search (a halving search is no one-run-per-config
    search at ``search_steps``, which the random search's clause says)."""
    if spec.search != "halving":
        return (
            f"each trained once for {spec.search_steps:,} iterations; the config nearest the data "
            "in exact W1"
        )
    h = spec.halving
    return (
        f"searched by successive halving (η = {h.eta}, {h.rungs} rungs, the last at the full "
        f"budget, {h.seeds} seeds per config at every rung, the first rung's results in the "
        "*search* column; section *Successive halving*); the config nearest the data in exact W1 "
        "at the full budget, its seeds' mean,"
    )


def section(out: Path, spec) -> str:
    """The report's account of the search: the schedule, its cost against an exhaustive search,
    and per search the configs each rung promoted (read from the rung records)."""
    halving = spec.halving
    lines = ["", "## Successive halving", ""]
    for dataset in spec.datasets:
        full = spec.full_steps(dataset)
        cost = halving.cost(spec.configs, full)
        lines.append(
            f"- **{dataset}**: budgets {', '.join(f'{b:,}' for b in halving.budgets(full))} "
            f"iterations; {' → '.join(map(str, halving.sizes(spec.configs)))} configs, "
            f"{halving.seeds} seeds each (η = {halving.eta}); {cost:,} iterations per search, "
            f"{cost / (spec.configs * full):.0%} of one seed of every config at the full budget, "
            f"{cost / (spec.configs * full * halving.seeds):.0%} of {halving.seeds} seeds."
        )
    # what the search ranks by: W1 on a point set, an image data set's score_key
    ranked = "mean " + " / ".join(dict.fromkeys(spec.score_key(d) or "W1" for d in spec.datasets))
    lines += ["", f"| data set | constraint | rung | iterations | promoted (config: {ranked}) |"]
    lines.append("|---|---|---|---|---|")
    for rung in range(halving.rungs):
        record = _read_rung(out, rung)
        if record is None:
            break
        for s in record["searches"]:
            means = {t["trial"]: -t["mean_score"][0] for t in s["trials"]}
            promoted = ", ".join(f"{k}: {means[k]:.3f}" for k in s["promoted"])
            lines.append(
                f"| {s['dataset']} | {s['constraint']} | {rung + 1} | {s['steps']:,} | {promoted} |"
            )
    return "\n".join(lines) + "\n"
