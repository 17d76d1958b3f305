"""Public datasets are downloaded on first use (as tfds.load does), and fail fast without network."""

import functools
import http.server
import threading
import time

import numpy as np
import pytest

from lipgan.core.errors import DatasetError
from lipgan.data.pipeline import load_examples
from tests.helpers import BOUNDED_S
from tests.remote_builder import LipganTinyRemote


@pytest.fixture
def server(tmp_path):
    """A loopback HTTP server serving ``points.csv`` from a temporary folder."""
    (tmp_path / "points.csv").write_text("1,2\n3,4\n5,6\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_an_unprepared_dataset_is_downloaded_and_prepared(server, tmp_path, monkeypatch):
    monkeypatch.setattr(LipganTinyRemote, "URL", f"{server}/points.csv")
    data_dir = tmp_path / "tfds"
    points = np.stack(list(load_examples("lipgan_tiny_remote", data_dir=str(data_dir))))
    assert sorted(points.tolist()) == [[1, 2], [3, 4], [5, 6]]
    # prepared now: a second load reads the prepared files, with no server needed
    monkeypatch.setattr(LipganTinyRemote, "URL", "http://127.0.0.1:9/gone.csv")
    assert len(list(load_examples("lipgan_tiny_remote", data_dir=str(data_dir)))) == 3


def test_no_network_fails_within_seconds_with_one_line(tmp_path, monkeypatch):
    from tests.conftest import free_port

    monkeypatch.setattr(LipganTinyRemote, "URL", f"http://127.0.0.1:{free_port()}/points.csv")
    started = time.monotonic()
    with pytest.raises(DatasetError) as info:
        load_examples("lipgan_tiny_remote", data_dir=str(tmp_path / "tfds"))
    assert time.monotonic() - started < BOUNDED_S  # TFDS's own retries: about 3.5 minutes
    message = str(info.value)
    assert "\n" not in message
    assert (
        "is not prepared in" in message
        and "could not be downloaded" in message
        and "tfds build lipgan_tiny_remote" in message
    )


def test_download_false_says_how_to_prepare(tmp_path):
    with pytest.raises(DatasetError, match="dataset.download is False: run `tfds build"):
        load_examples("lipgan_tiny_remote", data_dir=str(tmp_path / "tfds"), download=False)
