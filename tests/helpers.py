"""Builders shared by the tests: a tiny WGAN on 2-D data, the CLI in-process, tiny-run bindings,
and a study stopped by a signal then resumed (the local pool's and Ray's tests share it)."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import keras
import tensorflow as tf
from click.testing import CliRunner

#: Seconds before a child process counts as hung. A hang guard only, never a speed check: on 2
#: cores shared with other jobs (and a second xdist worker) a study cell has taken over 10 minutes
#: to run 8 steps, and a 6-spec replica probe over 10 minutes.
HANG_S = 1800

#: Seconds a wait that its own timeout bounds (a connect timeout of a few seconds, a signal acted
#: on, a line a child writes) may take before a test calls it unbounded. A hang guard, never a
#: speed check: generous on 2 cores shared with other jobs, yet far below what each test rules
#: out (a wait that ignores its timeout: minutes, or forever).
BOUNDED_S = 60


def wait_until(condition, what: str, seconds: float = BOUNDED_S, poll: float = 0.05) -> None:
    """Poll ``condition()`` until it holds; fail saying ``what`` did not happen after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {seconds:g} s")
        time.sleep(poll)


#: Seconds a child process may take to reach a point it is waited for (a TensorFlow start, the
#: first rows of a tiny run): generous on 2 busy cores; a test never passes by reaching it.
CHILD_S = 300


def wait_while_running(proc, condition, what: str, seconds: float = CHILD_S, poll=0.05) -> bool:
    """Poll ``condition()`` while ``proc`` runs: True once it holds, False when ``proc`` ended
    first (the caller says why that is wrong); the test fails at the deadline, never passes."""
    deadline = time.monotonic() + seconds
    while proc.poll() is None:
        if condition():
            return True
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {seconds:g} s")
        time.sleep(poll)
    return bool(condition())


def returns_within(fn, seconds: float = BOUNDED_S):
    """``fn()``'s value, or its exception re-raised, calling it in a daemon thread and waiting at
    most ``seconds``: a call that its own timeout should end fails the test instead of hanging it.

    Not for the CLI in-process (``lipgan run`` installs signal handlers, main thread only).
    """
    import threading

    outcome = {}

    def target():
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True, name="returns-within")
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise AssertionError(f"{fn} still running after {seconds:g} s: its timeout did not end it")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def drawn_points(monkeypatch) -> dict:
    """Spy on :func:`lipgan.plots.toy.draw_samples`: after a 2-D plot is drawn, ``{legend label:
    the points drawn under it}`` of the last one (how a test sees what a PNG shows)."""
    from lipgan.plots import toy

    drawn: dict = {}
    draw = toy.draw_samples

    def spy(ax, *args, **kwargs):
        contour = draw(ax, *args, **kwargs)
        drawn.clear()
        drawn.update({c.get_label(): c.get_offsets() for c in ax.collections if c.get_label()})
        return contour

    monkeypatch.setattr(toy, "draw_samples", spy)
    return drawn


#: ``python -c CLI run ...`` runs the CLI in a fresh process.
CLI = "import sys; from lipgan.cli.main import cli; cli(prog_name='lipgan')"

#: Bindings for a tiny ``lipgan run`` of the toy config (small MLPs, short intervals).
TINY = [
    "--bind",
    "mlp_critic.width=16",
    "--bind",
    "mlp_generator.width=16",
    "--bind",
    "train.global_batch_size=32",
    "--bind",
    "train.log_every=5",
    "--bind",
    "train.checkpoint_every=5",
    "--bind",
    "train.steps_per_execution=5",
    "--bind",
    "train.plot_samples=0",
    "--bind",
    "train.n_critic=1",
    "--bind",
    "dataset.shuffle_buffer=1000",
]

#: A 3-iteration ``lipgan run`` with SGD for both players (the multi-worker runs).
TINY_SGD = [
    "--bind",
    "train.steps=3",
    "--bind",
    "train.log_every=1",
    "--bind",
    "train.global_batch_size=16",
    "--bind",
    "mlp_critic.width=16",
    "--bind",
    "mlp_generator.width=16",
    "--bind",
    "train.critic_optimizer=@critic/SGD",
    "--bind",
    "critic/SGD.learning_rate=0.01",
    "--bind",
    "train.generator_optimizer=@generator/SGD",
    "--bind",
    "generator/SGD.learning_rate=0.01",
]

#: Options for a tiny ``lipgan bench`` (toy model, batch 8, one short repetition).
TINY_BENCH = [
    "--model",
    "toy",
    "--batch",
    "toy=8",
    "--repetitions",
    "1",
    "--min-rep-seconds",
    "0",
    "--steps-per-execution",
    "1",
    "--n-critic",
    "1",
]


def run_record(run_dir) -> dict:
    """The run dir's one record, ``run.json`` (lipgan/run/record.py)."""
    return json.loads((Path(run_dir) / "run.json").read_text())


def gin_config(run_dir) -> str:
    """The gin config as parsed that a CLI run's record holds."""
    return run_record(run_dir)["gin"]["config"]


def invoke(*args):
    """``lipgan ARGS`` in-process; exceptions propagate, so a crash shows its traceback."""
    from lipgan.cli.main import cli

    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def toy_wgan(
    constraint,
    *,
    strategy=None,
    config=None,
    n_critic: int = 1,
    width: int = 16,
    critic_depth: int = 2,
    generator_depth: int = 2,
    critic_optimizer=None,
    generator_optimizer=None,
):
    """A WGAN of small ReLU MLPs on 2-D data; Keras' global seed is reset first, so two calls with
    the same arguments build the same weights.

    Defaults: SGD(0.1) for both players, ``StepConfig(global_batch_size=8, n_critic, seed=5,
    jit_compile=False)`` (plumbing, not XLA; pass ``config`` to test XLA or other settings).
    """
    from lipgan.core.engine import WGAN
    from lipgan.core.step_config import StepConfig
    from lipgan.models import mlp_critic, mlp_generator

    keras.utils.set_random_seed(0)
    return WGAN(
        strategy or tf.distribute.get_strategy(),
        critic=lambda s: mlp_critic(s, width=width, depth=critic_depth),
        generator=lambda s: mlp_generator(s, width=width, depth=generator_depth),
        critic_optimizer=critic_optimizer or (lambda: keras.optimizers.SGD(0.1)),
        generator_optimizer=generator_optimizer or (lambda: keras.optimizers.SGD(0.1)),
        constraint=constraint,
        data_shape=(2,),
        config=config
        or StepConfig(global_batch_size=8, n_critic=n_critic, seed=5, jit_compile=False),
    )


def processes_mentioning(text: str) -> list[int]:
    """PIDs of live processes whose command line contains ``text`` (Linux /proc)."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text in cmdline.read_bytes().decode(errors="replace"):
                pids.append(int(cmdline.parent.name))
        except OSError:  # the process ended while we looked
            continue
    return pids


def stop_study_once_cells_log(args, run_dirs, out):
    """Start ``python ARGS`` (a ``lipgan study``), SIGTERM it once every cell of ``run_dirs`` has
    logged a step, and check the graceful stop: exit 143 with the one line that says how to
    resume, no traceback, no cell process left, no cell recorded. Returns the finished process."""
    from tests.conftest import finish, start_python

    proc = start_python(*args)
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline and proc.poll() is None:
        logs = [Path(d) / "metrics.jsonl" for d in run_dirs]
        if all(f.is_file() and f.read_text().strip() for f in logs):
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stopped = finish(proc, timeout=HANG_S)
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr[-3000:]
    last = stopped.stderr.strip().splitlines()[-1]
    finished = f"the study stopped with 0 of {len(run_dirs)} cells finished"
    assert last.startswith(f"Stopped: SIGTERM: {finished}"), last
    assert "run the same command again to resume" in last and "Traceback" not in stopped.stderr
    assert processes_mentioning(str(out)) == []  # each cell waited for, none left behind
    for run_dir in run_dirs:
        assert not (Path(run_dir) / "result.json").exists()  # unfinished, not failed
    return stopped


def resume_study(args, run_dirs, out, steps: int) -> None:
    """Run the same ``python ARGS`` again and check that every cell finished all ``steps``,
    continuing from its checkpoint: no step trained (or logged) twice."""
    from tests.conftest import finish, start_python

    resumed = finish(start_python(*args), timeout=HANG_S)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    data = json.loads((Path(out) / "study.json").read_text())
    assert [c["status"] for c in data["cells"]] == ["ok"] * len(run_dirs), data["cells"]
    for run_dir in map(Path, run_dirs):
        assert json.loads((run_dir / "result.json").read_text())["step"] == steps
        logged = [json.loads(ln)["step"] for ln in (run_dir / "metrics.jsonl").open()]
        assert logged == sorted(set(logged)) and logged[-1] == steps


def assert_compiled_matches_eager(critic, x, nonzero_gradients: bool = False) -> None:
    """The critic's output and its weights' gradients agree eagerly, under tf.function and XLA."""
    import numpy as np

    def fn(x):
        with tf.GradientTape() as tape:
            out = critic(x, training=True)
            total = tf.reduce_sum(out)
        return out, tape.gradient(total, critic.trainable_variables)

    eager = fn(x)
    if nonzero_gradients:
        assert all(float(tf.norm(g)) > 0 for g in eager[1])
    for compiled in (tf.function(fn), tf.function(fn, jit_compile=True)):
        got = compiled(x)
        np.testing.assert_allclose(got[0], eager[0], rtol=1e-4, atol=1e-5)
        for g, e in zip(got[1], eager[1]):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def critic_update_step(critic, constraint, learning_rate: float = 1e-2):
    """A compiled critic update as the engine orders it: the WGAN critic loss (mean D(fake) −
    mean D(real)), an Adam step, then ``constraint.after_update`` (projection, clipping; skipped
    when ``constraint`` is None). For tests of what a constraint keeps true however hard the
    optimizer pushes."""
    optimizer = keras.optimizers.Adam(learning_rate)
    optimizer.build(critic.trainable_variables)

    @tf.function
    def step(real, fake):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(critic(fake, training=True)) - tf.reduce_mean(
                critic(real, training=True)
            )
        variables = critic.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        if constraint is not None:
            constraint.after_update(critic)

    return step


def bjorck_replica_spread(construction: str) -> dict:
    """``tests/bjorck_sync_probe.py construction`` ('dense' or 'conv') in a child process: the
    largest difference between the two replicas' copies of the projected matrices once replica 1's
    are knocked off (``knocked``) and 2 iterations later (``after``)."""
    from tests.conftest import REPO, run_python

    done = run_python(REPO / "tests" / "bjorck_sync_probe.py", construction)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


class ReplicaProbes:
    """tests/replica_probe.py's results by replica layout, each layout run once per session.

    ``specs`` maps a layout to the constraint specs its process runs. Two test modules compare
    layouts (test_replica_invariance: the built-ins on 1, 2 and 4 replicas and 2 workers;
    test_lazy_regularization: lazy GP and DRAGAN's reference noise on 1 vs 2 replicas); one
    process per layout for both saves TensorFlow start-ups and the traces both need. Layouts
    start two at a time: the machines this runs on have 2 cores.
    """

    TIMEOUT = HANG_S

    def __init__(self, specs: dict[str, tuple[str, ...]]):
        self.specs, self.results = specs, {}

    def get(self, *layouts: str) -> dict:
        """``{layout: the probe's JSON}``, running the layouts not run yet."""
        from tests.conftest import finish, free_port

        missing = [lay for lay in layouts if lay not in self.results]
        single = [lay for lay in missing if lay != "multi_worker"]
        for pair in (single[i : i + 2] for i in range(0, len(single), 2)):
            procs = {lay: self._start(lay) for lay in pair}
            self.results.update(
                {lay: self._parse(finish(proc, self.TIMEOUT)) for lay, proc in procs.items()}
            )
        if "multi_worker" in missing:  # two processes joined by TF_CONFIG on 127.0.0.1
            cluster = {"worker": [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]}
            workers = [
                self._start(
                    "multi_worker",
                    TF_CONFIG=json.dumps(
                        {"cluster": cluster, "task": {"type": "worker", "index": i}}
                    ),
                )
                for i in range(2)
            ]
            chief, other = (finish(w, self.TIMEOUT) for w in workers)
            self.results["multi_worker"] = self._parse(chief)  # compared through the chief
            assert other.returncode == 0, other.stderr[-2000:]
        return {lay: self.results[lay] for lay in layouts}

    def _start(self, layout: str, **env):
        from tests.conftest import REPO, start_python

        probe = REPO / "tests" / "replica_probe.py"
        return start_python(probe, layout, *self.specs[layout], env=env)

    @staticmethod
    def _parse(proc) -> dict:
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        assert proc.returncode == 0 and lines, proc.stderr[-3000:]
        return json.loads(lines[-1][len("RESULT ") :])
