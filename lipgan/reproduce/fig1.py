"""Fig. 1 of Gulrajani et al. (2017), "Improved Training of Wasserstein GANs", on lipgan's parts.

* **1a** — for each toy set (8 Gaussians, 25 Gaussians, Swiss roll) a ReLU MLP critic 2→512³→1
  (He-initialized, as the official code's ``'he'`` layers) is trained against a *fixed* generator
  under weight clipping and under the gradient penalty. As in the official ``gan_toy.py``
  (``FIXED_GENERATOR``: ``real_data + 1.*tf.random_normal(tf.shape(real_data))``), the fixed
  generator adds N(0, 1) noise to the *same* real batch, so each fake point is paired with the real
  point it came from and the penalty's interpolates stay near it. Only the critic trains, so with
  enough steps it approaches the optimal critic of that constraint; the figure is its value surface
  on a 128×128 grid over [-3, 3]².
* **1b left** — Swiss roll, a 12-layer ReLU MLP critic and generator trained as a WGAN by lipgan's
  engine under clipping c ∈ {0.1, 0.01, 0.001} and under GP; then ‖∂L/∂hₗ‖, the norm of the gradient
  of the critic loss w.r.t. each hidden layer's activations (:func:`lipgan.diagnostics.layer_gradient_norms`).
* **1b right** — histograms of those critics' weights (clipping piles them at ±c).

The constraints are lipgan's plugins (``WeightClip``, ``GradientPenalty``), the models lipgan's MLPs
and the 1b training loop lipgan's :class:`~lipgan.engine.WGAN`. The paper gives no iteration counts
for Fig. 1 (1a's critics are "trained to optimality"); ours are chosen so that the full run takes
minutes, not hours, on 2 CPU cores; see ``docs/fig1.md``. ``quick=True`` is a small variant (width-128 1b nets, 5 iterations) that still shows the 1b result.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

#: (name, display label) of the toy sets, in the paper's column order.
TOY_SETS = (
    ("8gaussians", "8 Gaussians"),
    ("25gaussians", "25 Gaussians"),
    ("swissroll", "Swiss Roll"),
)
CLIP_VALUES = (0.1, 0.01, 0.001)
#: The paper's toy λ (``LAMBDA = .1`` in the official gan_toy.py).
TOY_GP_WEIGHT = 0.1


@dataclasses.dataclass(frozen=True)
class Settings:
    """Budgets and optimizers of one reproduction. The paper does not state Fig. 1's step counts."""

    batch_size: int = 256
    seed: int = 0
    # 1a: critic-only training against the fixed generator
    # 600: beyond it the certified critics' surfaces hardly change and the GP critic's (lr 1e-3)
    # fluctuates without settling, so more steps buy no closer optimum (docs/fig1.md, "600 critic
    # steps for 1a"; benchmarks/fig1_rows/convergence.py).
    a_steps: int = 600
    a_width: int = 512
    a_depth: int = 3
    # The official code's 'he' init of the ReLU layers (its output layer's 'glorot' has variance
    # 2/513 where He's has 2/512: the same to 0.2 %).
    a_init: str = "he_uniform"
    # Adam(lr, 0.5, 0.9) and RMSProp(lr) as in the paper, but lr 1e-3 instead of 1e-4 / 5e-5 so
    # that a few hundred critic steps come close to the optimal critic of each constraint.
    a_gp_lr: float = 1e-3
    a_clip_lr: float = 1e-3
    a_clip_c: float = 0.01
    # XLA for the 1a training call: cheaper per critic step than tf.function for GP and AOL, no
    # dearer for clipping and Björck, for a few seconds of compilation per row
    # (benchmarks/fig1_rows/run.py; benchmarks/RESULTS.md, "`lipgan reproduce fig1`").
    a_jit_compile: bool = True
    grid: int = 128
    lim: float = 3.0
    points: int = 512
    # 1b: full WGAN, 12-layer critic and generator, Swiss roll
    b_iterations: int = 50  # generator updates, each after n_critic critic updates
    b_n_critic: int = 5
    b_width: int = 512
    b_depth: int = 12
    b_gp_lr: float = 1e-4
    b_init: str = "he_uniform"  # the official code's 'he' initialization of ReLU layers
    # tf.function, not XLA, for the 1b WGAN: XLA made an iteration of the 12-layer step no
    # cheaper and doubled the cost of its first call (benchmarks/RESULTS.md, "`lipgan reproduce
    # fig1`").
    b_jit_compile: bool = False
    # RMSProp moves each weight by ~lr per step: 1e-3 lets 250 critic steps push weights to ±c,
    # where the paper's 5e-5 would need the paper's (much longer, unstated) training.
    b_clip_lr: float = 1e-3
    hist_bins: int = 100

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


FULL = Settings()
#: For tests and smoke runs: 1b on width-128 nets for 5 iterations of one critic step each; 1a
#: without XLA, whose compilation per row 100 steps do not pay back.
QUICK = Settings(
    a_steps=100,
    grid=64,
    points=256,
    b_iterations=5,
    b_n_critic=1,
    b_width=128,
    a_jit_compile=False,
)


# -- 1a -------------------------------------------------------------------------------------------
#: Fig. 1a rows: the paper's two, then the certified constructions (an addition to the paper).
FIG1A_KINDS = ("weight_clip", "gradient_penalty", "bjorck", "aol")
#: Critic activation per row: a construction keeps ‖∇D‖ = 1 only with a norm-preserving
#: activation (LNets' MaxMin); the paper's rows keep its ReLU critic.
FIG1A_ACTIVATION = {"bjorck": "maxmin", "aol": "maxmin"}


def _constraint(kind: str, c: float | None = None):
    from lipgan import constraints

    if kind == "weight_clip":
        return constraints.WeightClip(c=c)
    if kind == "gradient_penalty":
        return constraints.GradientPenalty(weight=TOY_GP_WEIGHT)
    return {"bjorck": constraints.Bjorck, "aol": constraints.AOL}[kind]()


def _optimizer(kind: str, lr: float):
    import keras

    if kind == "weight_clip":
        return keras.optimizers.RMSprop(learning_rate=lr)
    return keras.optimizers.Adam(learning_rate=lr, beta_1=0.5, beta_2=0.9)


def fixed_generator_batches(toy_set: str, s: Settings) -> tuple[np.ndarray, np.ndarray]:
    """Every training batch of a 1a row, drawn up front: ``(real, fake)``, each
    ``[s.a_steps, s.batch_size, 2]``, in the order (and from the generator) the per-step loop drew
    them, so the critic sees the same data as when each step sampled its own batch."""
    from lipgan.data.toy import SAMPLERS

    sampler = SAMPLERS[toy_set]
    rng = np.random.default_rng(s.seed)
    real = np.empty((s.a_steps, s.batch_size, 2), np.float32)
    fake = np.empty_like(real)
    for i in range(s.a_steps):
        real[i] = sampler(s.batch_size, rng)
        fake[i] = fixed_generator(real[i], rng)
    return real, fake


def critic_trainer(kind: str, s: Settings):
    """A fresh 1a critic and ``train(real, fake, start)``, which runs ``len(real)`` critic steps,
    numbered from ``start``, on the batches ``real[i]``, ``fake[i]`` in one compiled call and
    returns the last step's loss.

    One call runs every step (a ``tf.range`` loop, as lipgan's engine runs
    ``steps_per_execution`` iterations per call): the steps of these small critics are short
    enough that a Python call, argument conversion and dispatch per step are a noticeable share of
    them (benchmarks/RESULTS.md, "`lipgan reproduce fig1`"). ``s.a_jit_compile`` chooses XLA or plain
    ``tf.function`` for that call.
    """
    import keras
    import tensorflow as tf

    from lipgan.constraint import StepContext
    from lipgan.models import mlp_critic

    keras.utils.set_random_seed(s.seed)
    critic = mlp_critic(
        (2,),
        width=s.a_width,
        depth=s.a_depth,
        kernel_initializer=s.a_init,
        activation=FIG1A_ACTIVATION.get(kind, "relu"),
    )
    constraint = _constraint(kind, s.a_clip_c)
    critic = constraint.wrap_critic(critic)
    optimizer = _optimizer(kind, s.a_clip_lr if kind == "weight_clip" else s.a_gp_lr)
    optimizer.build(critic.trainable_variables)

    def step(real, fake, i):
        ctx = StepContext(
            seed=s.seed, step=i, phase=0, global_batch_size=s.batch_size, num_replicas=1
        )
        with tf.GradientTape() as tape:
            scores = tf.reshape(critic(tf.concat([real, fake], 0), training=True), [-1])
            loss = tf.reduce_mean(scores[s.batch_size :]) - tf.reduce_mean(scores[: s.batch_size])
            penalty = constraint.penalty(critic, real, fake, ctx)
            if penalty is not None:
                loss += tf.reduce_mean(penalty)
        variables = critic.trainable_variables
        grads = [
            tf.zeros_like(v) if g is None else g
            for g, v in zip(tape.gradient(loss, variables), variables)
        ]
        optimizer.apply_gradients(zip(grads, variables))
        constraint.after_update(critic)
        return loss

    @tf.function(jit_compile=s.a_jit_compile)
    def train_steps(real, fake, start):
        loss = tf.constant(np.nan, tf.float32)
        for i in tf.range(tf.shape(real, out_type=tf.int64)[0]):
            loss = step(real[i], fake[i], start + i)
        return loss

    def train(real, fake, start: int = 0) -> float:
        loss = train_steps(tf.constant(real), tf.constant(fake), tf.constant(start, tf.int64))
        return float(loss)

    return critic, train


def train_critic_against_fixed_generator(toy_set: str, kind: str, s: Settings):
    """A fresh critic trained for ``s.a_steps`` against real + N(0, 1) noise; returns it and the
    last step's loss (:func:`critic_trainer`, every step in one call)."""
    critic, train = critic_trainer(kind, s)
    return critic, train(*fixed_generator_batches(toy_set, s))


def fixed_generator(real: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The paper's fixed generator for Fig. 1a: *this* real batch plus unit-variance Gaussian noise.

    Row i of the result is real[i] + N(0, I), as in the official ``gan_toy.py``, so the gradient
    penalty's interpolate real[i] + ε(fake[i] − real[i]) lies within one noise step of real[i].
    """
    real = np.asarray(real, np.float32)
    return (real + rng.standard_normal(real.shape)).astype(np.float32)


def fig1a_row(toy_set: str, kind: str, s: Settings) -> tuple[dict, str]:
    """One Fig. 1a panel: the trained critic's numbers and surface, and its log line."""
    from lipgan import diagnostics
    from lipgan.data.toy import SAMPLERS
    from lipgan.plots.toy import critic_surface

    started, cpu = time.perf_counter(), time.process_time()
    rng = np.random.default_rng(s.seed + 1)
    real = SAMPLERS[toy_set](s.points, rng)
    fake = fixed_generator(real, rng)
    critic, loss = train_critic_against_fixed_generator(toy_set, kind, s)
    _, _, values = critic_surface(critic, s.lim, s.grid)
    grads = diagnostics.gradient_norm_stats(critic, real, fake, seed=s.seed)
    row = {
        "final_critic_loss": loss,
        "grad_norm": grads,
        "lipschitz_estimate": diagnostics.empirical_lipschitz(critic, real, fake),
        "surface": np.round(values.astype(np.float64), 6).tolist(),
        "real": np.round(real, 4).tolist(),
        "fake": np.round(fake, 4).tolist(),
    }
    # The certified rows' bound (an SVD of each kernel the critic computes with), so that an
    # estimate above it shows in the JSON and the log; clipping and GP certify nothing.
    bound = _constraint(kind, s.a_clip_c).lipschitz_bound(critic)
    if bound is not None:
        row["lipschitz_bound"] = bound
    bound = "" if bound is None else f"  bound {bound:.7f}"
    line = (
        f"fig1a {toy_set:<12} {kind:<17} loss {loss:+.4f}  mean ‖∇D‖ at interpolates "
        f"{grads['interp/mean']:.3f}  Lipschitz estimate {row['lipschitz_estimate']:.3f}{bound}"
        f"  ({_elapsed(started, cpu)})"
    )
    return row, line


def fig1a(s: Settings, log: Callable[[str], None]) -> dict:
    result = {}
    for toy_set, _ in TOY_SETS:
        result[toy_set] = {}
        for kind in FIG1A_KINDS:
            result[toy_set][kind], line = fig1a_row(toy_set, kind, s)
            log(line)
    return result


# -- 1b -------------------------------------------------------------------------------------------
def _config_name(kind: str, c: float | None) -> str:
    return f"weight_clip_c{c:g}" if kind == "weight_clip" else "gradient_penalty"


def train_deep_wgan(kind: str, c: float | None, s: Settings):
    """The 12-layer WGAN of Fig. 1b on the Swiss roll, trained by lipgan's engine; returns the WGAN."""
    import keras
    import tensorflow as tf

    from lipgan.data.pipeline import dataset
    from lipgan.engine import WGAN, StepConfig
    from lipgan.models import mlp_critic, mlp_generator

    keras.utils.set_random_seed(s.seed)
    lr = s.b_clip_lr if kind == "weight_clip" else s.b_gp_lr
    wgan = WGAN(
        tf.distribute.get_strategy(),
        critic=lambda shape: mlp_critic(shape, s.b_width, s.b_depth, s.b_init),
        generator=lambda shape: mlp_generator(shape, 2, s.b_width, s.b_depth, s.b_init),
        critic_optimizer=lambda: _optimizer(kind, lr),
        generator_optimizer=lambda: _optimizer(kind, lr),
        constraint=_constraint(kind, c),
        data_shape=(2,),
        config=StepConfig(s.batch_size, s.b_n_critic, s.seed, jit_compile=s.b_jit_compile),
    )
    data = dataset("lipgan_toy/swissroll")(s.batch_size, s.seed)
    if s.b_iterations:
        wgan.run(wgan.distribute(data), s.b_iterations)
    return wgan, data


def _critic_weights(critic) -> np.ndarray:
    return np.concatenate([np.asarray(v).reshape(-1) for v in critic.trainable_variables])


FIG1B_CONFIGS = tuple(("weight_clip", c) for c in CLIP_VALUES) + (("gradient_penalty", None),)


def fig1b_row(kind: str, c: float | None, s: Settings) -> tuple[dict, str]:
    """One Fig. 1b configuration: per-layer gradient norms, their spread, the weight histogram."""
    import tensorflow as tf

    from lipgan import diagnostics

    started, cpu = time.perf_counter(), time.process_time()
    name = _config_name(kind, c)
    wgan, data = train_deep_wgan(kind, c, s)
    real = np.asarray(next(iter(data)))
    z = tf.random.stateless_normal([len(real), *wgan.latent_shape], seed=[s.seed, 1])
    fake = np.asarray(wgan.generator(z, training=False))
    norms = diagnostics.layer_gradient_norms(wgan.critic, real, fake)
    weights = _critic_weights(wgan.critic)
    bound = c if c else float(np.abs(weights).max())
    counts, edges = np.histogram(weights, bins=s.hist_bins, range=(-bound, bound))
    row = {
        "layer_grad_norms": norms,
        "max_over_min": max_over_min(norms),
        "weight_histogram": {
            "edges": edges.tolist(),
            "counts": counts.tolist(),
            "frac_at_bounds": float(np.mean(np.abs(weights) >= 0.999 * bound)),
        },
    }
    line = (
        f"fig1b {name:<19} ‖∂L/∂h‖ first {norms[0]:.2e} last {norms[-1]:.2e} "
        f"max/min {row['max_over_min']:.1e}  ({_elapsed(started, cpu)})"
    )
    return row, line


def _fig1b_result(rows: dict) -> dict:
    """``{name: row}`` of :func:`fig1b_row` as the JSON's three tables, in the paper's order."""
    names = [_config_name(kind, c) for kind, c in FIG1B_CONFIGS]
    return {
        "layer_grad_norms": {n: rows[n]["layer_grad_norms"] for n in names},
        "max_over_min": {n: rows[n]["max_over_min"] for n in names},
        "weight_histograms": {n: rows[n]["weight_histogram"] for n in names},
    }


def fig1b(s: Settings, log: Callable[[str], None]) -> dict:
    rows = {}
    for kind, c in FIG1B_CONFIGS:
        rows[_config_name(kind, c)], line = fig1b_row(kind, c, s)
        log(line)
    return _fig1b_result(rows)


def max_over_min(norms) -> float:
    """Spread of the per-layer norms; a layer whose gradient is exactly 0 (every ReLU below it dead
    or underflow) counts as an infinite spread, written as 1e300 to keep the JSON standard."""
    norms = np.asarray(norms, np.float64)
    if (norms <= 0).any():
        return 1e300
    return float(norms.max() / norms.min())


# -- the qualitative claim, shared by the docs and the test --------------------------------------
def check_fig1b(result: dict) -> list[str]:
    """The paper's Fig. 1b claim on our numbers; returns the failures (empty = it holds).

    Clipping's per-layer norms change by ≥ 10² across the layers for c = 0.1 or c = 0.001 (explode
    or vanish); the gradient penalty's stay within 10×.
    """
    ratios = result["fig1b"]["max_over_min"]
    failures = []
    clip = {c: ratios[_config_name("weight_clip", c)] for c in (0.1, 0.001)}
    if max(clip.values()) < 1e2:
        failures.append(
            f"clipping norms vary by only {clip} (max/min) across layers; expected >= 1e2"
        )
    if ratios["gradient_penalty"] > 10:
        failures.append(
            f"GP norms vary by {ratios['gradient_penalty']:.1f}x across layers; expected <= 10x"
        )
    return failures


# -- running the rows ----------------------------------------------------------------------------
#: Every panel of the figure as an independent task, the costliest first: the pool's workers take
#: them in this order, which makes it longest-processing-time-first scheduling (each row ends
#: at most one row's time after the other worker's). The 12-layer WGANs cost the most (GP's
#: double backprop more), then the 1a rows Björck, AOL, GP and clipping (benchmarks/RESULTS.md,
#: "`lipgan reproduce fig1`").
ROWS = tuple(("b", kind, c) for kind, c in reversed(FIG1B_CONFIGS)) + tuple(
    ("a", toy_set, kind)
    for kind in ("bjorck", "aol", "gradient_penalty", "weight_clip")
    for toy_set, _ in TOY_SETS
)


def run_row(task: tuple, s: Settings) -> tuple[tuple, dict, str]:
    """Train and measure one entry of :data:`ROWS`; returns (task, its numbers, its log line)."""
    part, first, second = task
    row, line = fig1a_row(first, second, s) if part == "a" else fig1b_row(first, second, s)
    return task, row, line


def _elapsed(started: float, cpu: float) -> str:
    """Wall and CPU seconds since ``started``/``cpu`` (a row's cost on a shared machine)."""
    return f"{time.perf_counter() - started:.0f} s, {time.process_time() - cpu:.0f} CPU-s"


def source_digest(roots=None) -> str:
    """A digest of the ``.py`` sources under ``roots`` (default: the lipgan and lipgan_plugins
    packages) as they are on disk now.

    Why: a worker process imports the code when it starts, not when the command was typed, so a
    tree edited while a parallel run starts its workers gives rows computed by other code than
    the rest, with nothing in the output to show it: the likely cause of a run's three Björck rows
    above their certified bound, which the committed code, deterministic in a single-threaded
    worker, does not reproduce (CHANGELOG.md, Fixed). :func:`run_tasks` compares each worker's digest,
    taken right after its imports, with its own.
    """
    import hashlib

    if roots is None:
        import importlib.util

        # Located, not imported: the core never imports the built-in plugins (test_layering).
        roots = [
            Path(importlib.util.find_spec(name).origin).parent
            for name in ("lipgan", "lipgan_plugins")
        ]
    digest = hashlib.sha256()
    for root in map(Path, roots):
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


_WORKER_DIGEST = None


def _worker_init(threads: int, verbose: bool = False) -> None:
    """Pool initializer: TensorFlow imported as the CLI imports it (its C++ start-up lines and
    Python warnings hidden unless ``verbose``: a worker writes to the user's terminal), its thread
    pools set before it starts, then every module a row uses imported at once (not row by row,
    minutes later) and the digest of that code.

    The warning hidden that a user would otherwise see most: "5 out of the last 5 calls to
    critic_trainer.<locals>.train_steps triggered tf.function retracing". No function retraces:
    each 1a row builds its own critic and optimizer, so its ``train_steps`` is a new function
    traced once; TensorFlow's heuristic counts the traces of every function built from the same
    code.
    """
    from lipgan.quiet_tf import import_tensorflow

    import_tensorflow(verbose)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    import lipgan.data.pipeline  # noqa: F401
    import lipgan.data.toy  # noqa: F401
    import lipgan.diagnostics  # noqa: F401
    import lipgan.engine  # noqa: F401
    import lipgan.models  # noqa: F401
    import lipgan.plots.toy  # noqa: F401
    from lipgan.plugins import load_registry

    load_registry()  # imports every built-in plugin module
    global _WORKER_DIGEST
    _WORKER_DIGEST = source_digest()


def _run_row_in_worker(task: tuple, s: Settings) -> tuple[tuple, dict, str, str]:
    return (*run_row(task, s), _WORKER_DIGEST)


def check_sources(digest: str, worker_digests: dict) -> None:
    """Raise one line if a worker ran other code than ``digest`` (see :func:`source_digest`)."""
    from lipgan.errors import ConfigError

    mixed = sorted(str(task) for task, d in worker_digests.items() if d != digest)
    if mixed:
        raise ConfigError(
            f"the lipgan sources changed while the rows ran: {len(mixed)} row(s) (e.g. "
            f"{mixed[0]}) ran other code than this process; rerun without editing the tree"
        )


def run_rows(s: Settings, log: Callable[[str], None], jobs: int, verbose: bool = False) -> dict:
    """Every row of :data:`ROWS`, in ``jobs`` worker processes (in this process when 1).

    The rows share nothing (each seeds its own model and data), so running them side by side
    changes no number beyond float rounding (one thread per worker sums in another order). Why
    processes: the toy MLPs are too small for TensorFlow's intra-op threads to keep two cores
    busy (the same reason ``lipgan study`` runs one single-threaded cell per core,
    :func:`lipgan.study.runner.default_jobs`). ``verbose``: the workers show TensorFlow's logs.
    """
    done = run_tasks(ROWS, s, log, jobs, verbose)
    fig1a_result = {
        toy_set: {kind: done[("a", toy_set, kind)] for kind in FIG1A_KINDS}
        for toy_set, _ in TOY_SETS
    }
    rows_b = {_config_name(kind, c): done[("b", kind, c)] for kind, c in FIG1B_CONFIGS}
    return {"fig1a": fig1a_result, "fig1b": _fig1b_result(rows_b)}


def run_tasks(
    tasks, s: Settings, log: Callable[[str], None], jobs: int, verbose: bool = False
) -> dict:
    """``{task: row}`` for the given entries of :data:`ROWS`, as :func:`run_rows` runs them."""
    done = {}
    if jobs <= 1:
        for task in tasks:
            _, done[task], line = run_row(task, s)
            log(line)
        return done
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else jobs
    threads = max(1, (cores or 1) // jobs)
    digest, worker_digests = source_digest(), {}
    with ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_init,
        initargs=(threads, verbose),
    ) as pool:
        futures = [pool.submit(_run_row_in_worker, task, s) for task in tasks]
        for future in as_completed(futures):
            task, done[task], line, worker_digests[task] = future.result()
            log(line)
    check_sources(digest, worker_digests)
    return done


def default_jobs() -> int:
    """One worker per usable core (at most one per row)."""
    from lipgan.study.runner import default_jobs as per_core

    return min(per_core()[0], len(ROWS))


def run(
    out_dir,
    quick: bool = False,
    log: Callable[[str], None] = print,
    jobs: int | None = None,
    verbose: bool = False,
) -> dict:
    """Train everything, write ``fig1.json``, ``fig1a.png`` and ``fig1b.png`` to ``out_dir``.

    ``jobs``: worker processes for the rows (:func:`run_rows`); default one per core.
    ``verbose``: the workers show TensorFlow's C++ and Python logs (``lipgan --verbose``).
    """
    from lipgan.plots.fig1 import plot_fig1a, plot_fig1b

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    s = QUICK if quick else FULL
    jobs = default_jobs() if jobs is None else jobs
    started = time.perf_counter()
    cpu_started = _children_cpu_seconds()
    result = {"paper": "Gulrajani et al. 2017, Fig. 1", "quick": quick, "settings": s.as_dict()}
    result.update(run_rows(s, log, jobs, verbose))
    result["fig1b"]["claim_failures"] = check_fig1b(result)
    result["wall_seconds"] = time.perf_counter() - started
    result["jobs"] = jobs
    result["cpu_seconds"] = _children_cpu_seconds() - cpu_started
    (out / "fig1.json").write_text(json.dumps(result))
    plot_fig1a(result, out / "fig1a.png")
    plot_fig1b(result, out / "fig1b.png")
    log(
        f"fig1 written to {out} in {result['wall_seconds']:.0f} s "
        f"({jobs} job{'s' if jobs != 1 else ''}, {result['cpu_seconds']:.0f} CPU-seconds)"
    )
    return result


def _children_cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children (the pool's workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
