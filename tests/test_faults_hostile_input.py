"""Faults and hostile inputs: each is stopped with one line, and nothing is lost.

Every test here backs a row of ``docs/reliability.md``. Training is tiny (toy MLP, width 16,
n_critic 1, batch 32) so that the in-process tests take seconds.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO, finish, start_python
from tests.helpers import (
    BOUNDED_S,
    CLI,
    TINY,
    gin_config,
    invoke,
    returns_within,
    wait_until,
    wait_while_running,
)
from tests.test_lifecycle import checkpoint_steps, one_line_error, snapshot, train


def metric_steps(run_dir) -> list[int]:
    import json

    return [json.loads(ln)["step"] for ln in (run_dir / "metrics.jsonl").read_text().splitlines()]


# -- 1. a damaged checkpoint state file -----------------------------------------------------------
@pytest.mark.slow
def test_damaged_state_file_resumes_from_the_newest_checkpoint_file(tmp_path):
    """Garbage or an empty ``checkpoints/checkpoint``: resume from the files, never from step 0."""
    run_dir = tmp_path / "run"
    train(run_dir, 10)
    state = run_dir / "checkpoints" / "checkpoint"
    for damage, steps in [("garbage\n", 15), ("", 20)]:
        state.write_text(damage)
        result = train(run_dir, steps)
        assert f"at step {steps - 5}" in result.output, result.output
        assert metric_steps(run_dir) == list(range(5, steps + 1, 5))  # nothing cut back
        assert "is damaged" in result.output and "using the checkpoint files" in result.output
        from lipgan.checkpoint import read_state

        prefixes, problem = read_state(run_dir / "checkpoints")
        assert problem is None and prefixes[-1].endswith(f"ckpt-{steps}")  # rewritten on save
    assert checkpoint_steps(run_dir) == [10, 15, 20]  # max_to_keep=3 still applies


@pytest.mark.slow
def test_damaged_state_file_and_unreadable_checkpoints_stop_without_writing(tiny_run):
    run_dir = tiny_run  # trained to step 5 (conftest)
    (run_dir / "checkpoints" / "checkpoint").write_text("garbage\n")
    for data in (run_dir / "checkpoints").glob("ckpt-*.data-*"):
        data.write_bytes(data.read_bytes()[:16])
    before = snapshot(run_dir)
    result = invoke("run", *TINY, "--bind", "train.steps=10", "--run-dir", str(run_dir))
    one_line_error(result, "no readable checkpoint", "ckpt-5")
    assert snapshot(run_dir) == before


# -- 2. one writer per run dir --------------------------------------------------------------------
def start_run(run_dir, steps):
    """``lipgan run`` in a subprocess; returns once it has logged its first metrics."""
    proc = start_python(
        "-c",
        CLI,
        "run",
        *TINY,
        "--bind",
        f"train.steps={steps}",
        "--bind",
        "train.checkpoint_every=0",
        "--run-dir",
        run_dir,
    )
    metrics = run_dir / "metrics.jsonl"
    if wait_while_running(proc, lambda: metrics.is_file() and metrics.read_text().strip(), "a row"):
        return proc
    raise AssertionError(f"the run did not start: {finish(proc).stderr[-2000:]}")


@pytest.mark.slow
def test_second_run_on_a_live_run_dir_fails_at_once_naming_the_holder(tmp_path):
    run_dir = tmp_path / "run"
    holder = start_run(run_dir, 100_000)
    try:
        lines = len((run_dir / "metrics.jsonl").read_text().splitlines())
        started = time.monotonic()
        result = invoke("run", *TINY, "--bind", "train.steps=10", "--run-dir", str(run_dir))
        one_line_error(result, f"in use by process {holder.pid}", "another --run-dir")
        assert time.monotonic() - started < BOUNDED_S  # not waiting for the holder to end
        assert holder.poll() is None
        # The live run's log was not rewritten: it only grew.
        assert len((run_dir / "metrics.jsonl").read_text().splitlines()) >= lines
        assert not list(run_dir.glob("run-before-*"))  # the live run's record was not replaced
    finally:
        holder.send_signal(signal.SIGKILL)
        finish(holder)
    # The kernel dropped the killed holder's lock: nothing stale blocks the next run.
    result = train(run_dir, 10)
    assert "Error" not in result.output


def test_run_dir_lock_is_exclusive_within_one_process_and_released_on_close(tmp_path):
    from lipgan.rundir import LOCK, RunDir

    first, second = RunDir(tmp_path), RunDir(tmp_path)
    first.lock()
    with pytest.raises(Exception, match=f"in use by process {os.getpid()}"):
        second.lock()
    first.close()
    second.lock()
    second.close()
    assert (tmp_path / LOCK).is_file()


def test_default_run_dirs_of_two_processes_differ():
    code = "from lipgan.cli import _default_run_dir; print(_default_run_dir(['a.gin']))"
    names = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
        ).stdout.strip()
        for _ in range(2)
    ]
    assert names[0] != names[1] and all(n.startswith("runs/a-") for n in names)


# -- 3. a plugin penalty of the wrong shape or dtype ----------------------------------------------
BAD_PENALTY_PLUGIN = '''
import tensorflow as tf
from lipgan import Constraint, hookimpl

class BadShape(Constraint):
    """Returns the penalty in a shape the contract does not allow."""
    name = "bad_shape"

    def __init__(self, kind: str = "column"):
        self.kind = kind

    def penalty(self, critic, real, fake, ctx):
        scores = critic(real, training=False)  # [b, 1], the critic's own output shape
        if self.kind == "column":
            return 0.1 * tf.square(scores)
        if self.kind == "scalar":
            return tf.reduce_mean(tf.square(scores))
        return tf.cast(tf.ones([tf.shape(real)[0]]), tf.int32)

@hookimpl
def lipgan_register_constraints(register):
    register(BadShape)
'''


@pytest.fixture
def bad_penalty_plugin(tmp_path, monkeypatch):
    from tests.fake_dists import make_dist

    site = make_dist(
        tmp_path / "site", "lipgan-bad", "0.1", "bad_shape", "lipgan_bad_shape", BAD_PENALTY_PLUGIN
    )
    monkeypatch.syspath_prepend(str(site))
    import importlib

    return importlib.import_module("lipgan_bad_shape").BadShape


@pytest.mark.parametrize(
    "kind, got", [("column", "shape [32, 1] and dtype float32"), ("scalar", "shape []")]
)
def test_penalty_of_the_wrong_shape_stops_the_run_with_one_line(
    tmp_path, bad_penalty_plugin, kind, got
):
    result = invoke(
        "run",
        *TINY,
        "--bind",
        "train.steps=5",
        "--bind",
        "train.constraint = @bad_shape()",
        "--bind",
        f"bad_shape.kind = '{kind}'",
        "--run-dir",
        str(tmp_path / "run"),
    )
    line = one_line_error(result, "'bad_shape'", "lipgan_bad_shape.BadShape", got)
    assert "shape [32]" in line and "one value per example" in line and "in user code" not in line
    assert checkpoint_steps(tmp_path / "run") == []


def test_conformance_kit_reports_the_engines_message(bad_penalty_plugin):
    from lipgan import testing

    for kind, got in [("column", "shape [8, 1]"), ("scalar", "shape []"), ("int", "dtype int32")]:
        for check in (testing.check_penalty, testing.check_compiled):
            with pytest.raises(AssertionError, match=r"the plugin contract asks") as info:
                check(bad_penalty_plugin(kind))
            assert got in str(info.value), (check.__name__, kind, info.value)


# -- 4. multi_worker: a peer port that accepts connections but is not a lipgan worker -------------
class SilentPeer(str):
    """The silent peer's address, and the connections it accepted (``held``): a worker that has
    connected to it is inside its rendezvous."""

    def __new__(cls, address: str, held: list):
        peer = super().__new__(cls, address)
        peer.held = held
        return peer


@pytest.fixture
def silent_peer():
    """A loopback port that accepts connections and never says anything."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield SilentPeer(f"127.0.0.1:{server.getsockname()[1]}", held)
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def cluster_config(addresses, index=0):
    return {"cluster": {"worker": list(addresses)}, "task": {"type": "worker", "index": index}}


def test_rendezvous_refuses_a_silent_peer_within_connect_timeout(silent_peer):
    from lipgan import StrategyUnavailable
    from lipgan_plugins.multi_worker import rendezvous
    from tests.conftest import free_port

    config = cluster_config([f"127.0.0.1:{free_port()}", silent_peer])
    started = time.monotonic()
    with pytest.raises(StrategyUnavailable, match="did not answer the lipgan hello") as info:
        returns_within(lambda: rendezvous(config, timeout=2))  # the silent peer never ends it
    assert time.monotonic() - started >= 2  # it waited for its timeout before giving up
    assert silent_peer in str(info.value) and "connect_timeout" in str(info.value)


def test_rendezvous_of_two_lipgan_workers_and_of_another_cluster():
    import threading

    from lipgan import StrategyUnavailable
    from lipgan_plugins.multi_worker import rendezvous
    from tests.conftest import free_port

    addresses = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]
    errors = []

    def worker(index, config_addresses, timeout):
        try:
            rendezvous(cluster_config(config_addresses, index), timeout=timeout)
        except StrategyUnavailable as exc:
            errors.append((index, str(exc)))

    threads = [threading.Thread(target=worker, args=(i, addresses, 10)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []

    # Worker 1 believes in a three-worker cluster: same ports, another run token.
    third = f"127.0.0.1:{free_port()}"
    threads = [
        threading.Thread(target=worker, args=(0, addresses, 2)),
        threading.Thread(target=worker, args=(1, [*addresses, third], 2)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    messages = dict(errors)
    assert "of another cluster (its TF_CONFIG differs)" in messages[0]
    assert "of another cluster" in messages[1] and third in messages[1]


def test_run_with_a_silent_peer_fails_with_one_line(tmp_path, silent_peer, monkeypatch):
    import json

    from tests.conftest import free_port

    config = cluster_config([f"127.0.0.1:{free_port()}", silent_peer])
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    started = time.monotonic()
    result = invoke(
        "run",
        *TINY,
        "--strategy",
        "multi_worker",
        "--bind",
        "multi_worker.connect_timeout=2",
        "--run-dir",
        str(tmp_path / "run"),
    )
    one_line_error(result, "did not start within 2s", silent_peer, "lipgan hello")
    assert time.monotonic() - started < BOUNDED_S  # the silent peer alone would never end it
    assert not (tmp_path / "run").exists()


WAIT_FOR_SILENT_PEER = """
import json, os, sys
from lipgan_plugins.multi_worker import rendezvous
print("waiting", flush=True)
rendezvous(json.loads(os.environ["CLUSTER"]), timeout=600)
print("returned", flush=True)
"""


@pytest.mark.slow
def test_sigterm_ends_the_wait_for_peers_at_once(silent_peer):
    import json

    from tests.conftest import free_port

    config = cluster_config([f"127.0.0.1:{free_port()}", silent_peer])
    proc = start_python("-c", WAIT_FOR_SILENT_PEER, env={"CLUSTER": json.dumps(config)})
    try:
        assert proc.stdout.readline().strip() == "waiting"
        wait_until(lambda: silent_peer.held, "a hello to the silent peer")  # inside rendezvous now
        assert proc.poll() is None, "rendezvous returned although the peer never answered"
        proc.send_signal(signal.SIGTERM)
        # Ended by the signal (a child still waiting at BOUNDED_S is killed: -SIGKILL), long
        # before its own 600 s timeout.
        result = finish(proc, timeout=BOUNDED_S)
        assert result.returncode == -signal.SIGTERM and "returned" not in result.stdout
    finally:
        if proc.poll() is None:
            proc.kill()


def test_tensorflow_cluster_start_is_bounded_too(monkeypatch):
    """After the handshake, a TensorFlow start that never returns is cut off as well."""
    import json
    import threading

    import tensorflow as tf

    from lipgan import StrategyUnavailable
    from lipgan_plugins.multi_worker import MultiWorker
    from tests.conftest import free_port

    monkeypatch.setenv("TF_CONFIG", json.dumps(cluster_config([f"127.0.0.1:{free_port()}"])))
    never = threading.Event()  # a start that returns only when the test ends
    monkeypatch.setattr(tf.distribute, "MultiWorkerMirroredStrategy", lambda **kw: never.wait())
    try:
        with pytest.raises(StrategyUnavailable, match="cluster start did not finish within 1s"):
            returns_within(MultiWorker(connect_timeout=1).create)
    finally:
        never.set()


# -- 5. config history and run-dir rules ----------------------------------------------------------
@pytest.mark.slow
def test_force_twice_at_one_step_keeps_every_replaced_record(tiny_run):
    run_dir = tiny_run  # trained to step 5 (conftest)
    train(run_dir, 5, "--bind", "gradient_penalty.weight=1.0", "--force")
    train(run_dir, 5, "--bind", "gradient_penalty.weight=2.0", "--force")
    weight = lambda name: json.loads((run_dir / name).read_text())["settings"]["constraint"]  # noqa: E731
    assert weight("run-before-5.json")["weight"] == 0.1
    assert weight("run-before-5-2.json")["weight"] == 1.0
    assert weight("run.json")["weight"] == 2.0
    assert "gradient_penalty.weight = 2.0" in gin_config(run_dir)


@pytest.mark.slow
def test_checkpoints_without_a_config_record_need_force(tiny_run):
    run_dir = tiny_run  # trained to step 5 (conftest)
    changed = ("--bind", "train.steps=10", "--bind", "train.seed=3", "--run-dir", str(run_dir))
    one_line_error(invoke("run", *TINY, *changed), "different config (step_config.seed: 0 -> 3)")
    (run_dir / "run.json").unlink()
    before = snapshot(run_dir)
    refused = invoke("run", *TINY, *changed)
    one_line_error(refused, "holds checkpoints but no run.json", "--force")
    assert snapshot(run_dir) == before
    forced = train(run_dir, 10, "--force")
    assert "resumed from" in forced.output and "train.steps = 10" in gin_config(run_dir)


@pytest.mark.parametrize(
    "binding, message",
    [
        ("train.n_critic=2.5", "train.n_critic=2.5 is invalid: must be an integer"),
        ("train.steps_per_execution=2.0", "train.steps_per_execution=2.0 is invalid"),
        ("train.steps='abc'", "train.steps='abc' is invalid: must be an integer"),
        ("train.jit_compile=1", "train.jit_compile must be True, False or 'auto'; got 1"),
    ],
)
def test_wrong_parameter_types_fail_before_anything_is_written(tmp_path, binding, message):
    result = invoke("run", *TINY, "--bind", binding, "--run-dir", str(tmp_path / "run"))
    one_line_error(result, message)
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_run_that_failed_before_its_first_checkpoint_does_not_bind_the_next(
    tmp_path, bad_penalty_plugin
):
    run_dir = tmp_path / "run"
    failed = invoke(
        "run",
        *TINY,
        "--bind",
        "train.steps=5",
        "--bind",
        "train.constraint = @bad_shape()",
        "--run-dir",
        str(run_dir),
    )
    one_line_error(failed, "bad_shape")
    assert "bad_shape" in gin_config(run_dir) and checkpoint_steps(run_dir) == []
    fixed = train(run_dir, 5)  # the corrected command: the default constraint
    assert "Error" not in fixed.output and checkpoint_steps(run_dir) == [5]
    assert "bad_shape" not in gin_config(run_dir)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_second_signal_aborts_with_the_signal_exit_status(sig):
    from lipgan.errors import Interrupted
    from lipgan.interrupt import StopRequests

    previous = signal.getsignal(sig)
    with pytest.raises(Interrupted, match=f"second {sig.name}: aborted") as info:
        with StopRequests() as stop:
            os.kill(os.getpid(), sig)  # its handler runs between bytecodes of this thread
            wait_until(lambda: stop.requested, f"the first {sig.name} recorded")
            os.kill(os.getpid(), sig)
            wait_until(lambda: False, f"the second {sig.name} raising Interrupted")
    assert info.value.exit_code == 128 + sig
    assert signal.getsignal(sig) is previous


# -- 6. one line instead of a traceback -----------------------------------------------------------
@pytest.mark.parametrize(
    "content, message",
    [
        ('include "missing_file.gin"\n', "include 'missing_file.gin': no such file"),
        ("import not_a_module_xyz\n", "`import not_a_module_xyz` failed"),
    ],
)
def test_gin_include_or_import_of_something_missing(tmp_path, content, message):
    config = tmp_path / "bad.gin"
    config.write_text(content)
    result = invoke("run", "--gin", str(config), "--run-dir", str(tmp_path / "run"))
    one_line_error(result, f"{config}", message)
    assert not (tmp_path / "run").exists()


def test_undefined_macro_and_directory_as_gin(tmp_path):
    config = tmp_path / "macro.gin"
    config.write_text("train.steps = %UNDEFINED_STEPS\n")
    result = invoke("run", "--gin", "wgangp_toy_quick", "--gin", str(config), *TINY)
    one_line_error(result, "gin macro %UNDEFINED_STEPS is used but never defined")
    one_line_error(invoke("run", "--gin", str(tmp_path)), "is a directory")


@pytest.mark.parametrize(
    "binding, message",
    [
        ("dataset.data_dir='{file}'", "is a file, not a directory"),
        ("dataset.data_dir='{file}/sub'", "cannot be created"),
        ("dataset.shuffle_buffer=0", "dataset.shuffle_buffer must be an integer >= 1"),
        ("dataset.name='lipgan_toy/8gausians'", "no config '8gausians'; lipgan_toy has 8gaussians"),
    ],
)
def test_bad_dataset_settings(tmp_path, binding, message):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    run_dir = tmp_path / "run"
    result = invoke("run", *TINY, "--bind", binding.format(file=blocker), "--run-dir", str(run_dir))
    line = one_line_error(result, message)
    if "8gausians" in line:  # the list of the builder's configs is whole, not cut off
        from lipgan.data.toy import SAMPLERS

        assert line.endswith(list(SAMPLERS)[-1]) and all(name in line for name in SAMPLERS)
    assert not run_dir.exists()


@pytest.mark.slow
def test_sample_into_an_unwritable_place(tmp_path, tiny_run):
    run_dir = tiny_run  # trained to step 5 (conftest)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = invoke("sample", str(run_dir), "--out", str(blocker / "sub" / "s"))
    one_line_error(result, "--out", "cannot write", "choose a writable place")
    assert blocker.read_text() == "x"


@pytest.mark.slow
def test_full_disk_during_a_checkpoint_save(tiny_run, monkeypatch):
    import tensorflow as tf

    run_dir = tiny_run  # trained to step 5 (conftest)
    real_save = tf.train.CheckpointManager.save

    def full_disk(self, checkpoint_number=None, **kwargs):
        # What a full disk leaves: a temporary folder with part of the data, then an error.
        partial = run_dir / "checkpoints" / f"ckpt-{checkpoint_number}_temp"
        partial.mkdir()
        (partial / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"\0" * 100)
        raise tf.errors.ResourceExhaustedError(None, None, "No space left on device")

    monkeypatch.setattr(tf.train.CheckpointManager, "save", full_disk)
    result = invoke("run", *TINY, "--bind", "train.steps=10", "--run-dir", str(run_dir))
    line = one_line_error(result, "cannot save checkpoint 10", "No space left on device")
    assert "ckpt-5 is kept" in line and "a checkpoint needs about" in line
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir() if p.is_dir()) == []
    monkeypatch.setattr(tf.train.CheckpointManager, "save", real_save)
    assert "resumed from" in train(run_dir, 10).output  # the previous checkpoint still works


RAISING_PENALTY_PLUGIN = """
from lipgan import Constraint, hookimpl
from lipgan.errors import ConfigError

class Raising(Constraint):
    name = "raising"

    def __init__(self, lipgan_error: bool = False):
        self.lipgan_error = lipgan_error

    def penalty(self, critic, real, fake, ctx):
        if self.lipgan_error:
            raise ConfigError("raising.threshold must be set for this critic")
        raise RuntimeError("this penalty is broken")

@hookimpl
def lipgan_register_constraints(register):
    register(Raising)
"""


@pytest.mark.parametrize(
    "lipgan_error, fragments",
    [
        (False, ["RuntimeError: this penalty is broken", "lipgan_raising.py:14, in penalty"]),
        (True, ["raising.threshold must be set for this critic"]),
    ],
)
def test_error_inside_a_plugin_penalty_names_the_error_and_where(
    tmp_path, monkeypatch, lipgan_error, fragments
):
    from tests.fake_dists import make_dist

    site = make_dist(
        tmp_path / "site",
        "lipgan-raising",
        "0.1",
        "raising",
        "lipgan_raising",
        RAISING_PENALTY_PLUGIN,
    )
    monkeypatch.syspath_prepend(str(site))
    result = invoke(
        "run",
        *TINY,
        "--bind",
        "train.constraint = @raising()",
        "--bind",
        f"raising.lipgan_error = {lipgan_error}",
        "--run-dir",
        str(tmp_path / "run"),
    )
    line = one_line_error(result, *fragments)
    assert "in user code" not in line
    if lipgan_error:  # the plugin's own one-line error, as is
        assert line == "Error: raising.threshold must be set for this critic"


@pytest.mark.slow
def test_force_with_a_changed_model_says_so(tiny_run):
    run_dir = tiny_run  # trained to step 5 (conftest)
    result = invoke(
        "run",
        *TINY,
        "--bind",
        "train.steps=10",
        "--bind",
        "mlp_critic.width=32",
        "--force",
        "--run-dir",
        str(run_dir),
    )
    line = one_line_error(result, "ckpt-5 was written for other models", "new --run-dir")
    assert "unreadable" not in line and "no readable checkpoint" not in line


# -- 7. a plugin that registers a built-in's name -------------------------------------------------
CLASHING_PLUGIN = '''
import tensorflow as tf
from lipgan import Constraint, hookimpl

class MyGradientPenalty(Constraint):
    """Claims the built-in's name."""
    name = "gradient_penalty"

    def __init__(self, weight: float = 1.0):
        self.weight = weight

    def penalty(self, critic, real, fake, ctx):
        return self.weight * tf.ones([tf.shape(real)[0]])

@hookimpl
def lipgan_register_constraints(register):
    register(MyGradientPenalty)
'''


def test_a_clashing_plugin_blocks_only_configs_that_use_the_name(tmp_path, monkeypatch):
    from tests.fake_dists import make_dist

    site = make_dist(tmp_path / "site", "lipgan-clash", "0.1", "my_gp", "my_gp", CLASHING_PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("LIPGAN_DISABLE_PLUGINS", raising=False)

    listed = invoke("plugins")
    assert listed.exit_code == 0, listed.output
    clash = [ln for ln in listed.output.splitlines() if ln.startswith("clash")]
    assert len(clash) == 1 and "'gradient_penalty'" in clash[0]
    assert "(built-in)" in clash[0] and "plugin 'my_gp' (lipgan-clash 0.1)" in clash[0]
    assert "weight_clip" in listed.output  # everything else is still listed

    needs_it = invoke("config", "show")  # the default config uses gradient_penalty
    one_line_error(needs_it, "'gradient_penalty' is unavailable", "lipgan-clash 0.1")
    other = invoke("config", "show", "--gin", "wgan_clip_toy")
    assert other.exit_code == 0 and "weight_clip" in other.output

    # Blocking the built-in hands the name to the plugin, and every command says so.
    replaced = invoke("config", "show", "--disable-plugin", "gradient_penalty")
    assert replaced.exit_code == 0, replaced.output
    assert (
        "warning: constraint 'gradient_penalty' is now provided by plugin 'my_gp' "
        "(lipgan-clash 0.1) as my_gp.MyGradientPenalty, not by lipgan's built-in (blocked)"
    ) in replaced.output
