"""examples/notebook_walkthrough.py, a researcher's notebook as a script,
runs every point in a child process (a fresh TensorFlow, as a user's kernel is): tfds-style dict
data and own models, fit(verbose=0), the CLI's eval/audit/sample/run --resume on the run dir it
wrote, and each bad input refused with one line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lipgan.core import child_process

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "notebook_walkthrough.py"


def json_after(lines: list[str], header: str) -> dict:
    """The JSON object printed after ``header`` (the CLI's pretty-printed output)."""
    start = lines.index(header) + 1
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return json.loads("\n".join(lines[start : end + 1]))


@pytest.mark.heavy
@pytest.mark.slow
def test_the_notebook_walkthrough_runs_every_point(tmp_path):
    # -u: on a timeout, the cells that ran are in the report. About 2 CPU-minutes (six
    # TensorFlow start-ups: the script and five CLI calls); the timeout allows for busy cores.
    try:
        proc = subprocess.run(
            [sys.executable, "-u", str(SCRIPT), str(tmp_path / "out")],
            capture_output=True,
            text=True,
            env=child_process.environment(),
            cwd=tmp_path,
            timeout=1800,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"timed out after these lines:\n{exc.stdout}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()

    # 1-3: dict data with uint8 images, own models, fit(verbose=0) printing nothing at all
    assert "cell 1: data TensorSpec(shape=(8, 8, 1), dtype=tf.uint8, name=None)" in lines
    assert "cell 2: latent shape (16,)" in lines  # the generator's Input shape
    begins = lines.index("cell 3: fit(verbose=0) begins")
    assert lines[begins + 1].startswith("cell 3: trained to step 10;")

    # 4-5: the CLI reads the run dir the script wrote and finds what Python found
    assert "$ lipgan eval -> exit 0" in lines
    evaluated = json_after(lines, "$ lipgan eval -> exit 0")
    assert evaluated["step"] == 10
    python_w1 = next(ln for ln in lines if ln.startswith("cell 4: W1 "))
    assert python_w1.startswith(f"cell 4: W1 {evaluated['w1']:.3f} (floor ")
    audited = json_after(lines, "$ lipgan audit -> exit 0")
    assert f"cell 4: Lipschitz constant >= {audited['lower_bound']:.3f}" in lines
    assert "$ lipgan sample -> exit 0" in lines
    assert (tmp_path / "out" / "samples.npz").is_file()
    assert (tmp_path / "out" / "samples.png").is_file()
    resumed = lines.index("$ lipgan run --resume -> exit 0")
    tail = lines[resumed:]
    assert any(ln.startswith("resumed from ") and ln.endswith("at step 10") for ln in tail)
    assert any(ln.startswith("last evaluation (step 20): W1 ") for ln in tail)

    # 6: every bad input gets one line (no traceback, nothing accepted)
    refused = [ln for ln in lines if ln.startswith("cell 6: ")]
    assert len(refused) == 7 and not any(ln.endswith("ACCEPTED") for ln in refused)
    expected = {
        "a list as data": "data must be a dataset name",
        "dicts without an 'image' feature": "pass data_key=",
        "a critic with two outputs": "end it with keras.layers.Dense(1)",
        "a generator without an Input": "start it with keras.Input(shape=...)",
        "a negative learning rate": "learning_rate=-0.001 must be >= 0",
        "evaluate(num_samples=1)": "needs >= 2",
        "fit(verbose=3)": "use 0 (silent), 1 (bar) or 2 (lines)",
    }
    for what, says in expected.items():
        line = next(ln for ln in refused if ln.startswith(f"cell 6: {what}: "))
        assert says in line, line
    for header, says in (
        ("$ lipgan eval of a folder that is no run dir -> exit 1", "no such run directory"),
        (
            "$ lipgan run --resume with a setting that is not resumable -> exit 1",
            "takes only train.steps",
        ),
    ):
        after = lines[lines.index(header) + 1]
        assert after.startswith("Error: ") and says in after, after
    assert "Traceback" not in proc.stdout + proc.stderr
