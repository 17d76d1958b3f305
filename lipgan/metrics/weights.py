"""The weights file FID's network needs: found locally, or downloaded once into a cache.

Handled the way ``tfds.load`` handles data: a local copy named by a setting wins; otherwise the
file is looked up in lipgan's cache dir and, on first use, downloaded from its official URL,
checked, and moved into place atomically (a download that breaks leaves nothing behind). A
machine without network gets one line, within seconds, naming the file, the URL and the exact
path to put it at.

The file is ``classify_image_graph_def.pb`` inside ``inception-2015-12-05.tgz``: the graph
that TTUR's ``fid.py`` (github.com/bioinf-jku/TTUR, ``check_or_download_inception``) downloads
and that pytorch-fid, torch-fidelity and clean-fid ported. No checksum of it is published with
the archive (TensorFlow's ``classify_image.py`` records only the sizes, in a comment: archive
88,931,400 bytes, graph 95,673,916 bytes), so a download is checked by those two sizes here and
by its graph structure when :mod:`lipgan.metrics.inception` loads it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tarfile
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from lipgan.core.errors import LipganError

#: A local copy of the graph (the ``.pb``, or the ``.tgz`` it comes in): used as is, never copied.
GRAPH_ENV = "LIPGAN_INCEPTION_GRAPH"
#: lipgan's cache dir (default ``$XDG_CACHE_HOME/lipgan``, else ``~/.cache/lipgan``).
CACHE_ENV = "LIPGAN_CACHE"
#: Seconds to wait for the download host to accept a connection (and for each read after it).
CONNECT_TIMEOUT = 5.0


class WeightsError(LipganError):
    """Weights that are neither here nor downloadable, or a file that is not the expected one."""


@dataclass(frozen=True)
class WeightsSpec:
    """Where a weights file comes from and how a download of it is checked.

    Args:
        name: folder of the cache dir the file is kept in.
        url: the official archive (a ``.tgz``).
        member: the file inside the archive that is used.
        archive_size: the archive's size in bytes, or None not to check it.
        member_size: the member's size in bytes, or None not to check it.
    """

    name: str
    url: str
    member: str
    archive_size: int | None = None
    member_size: int | None = None


INCEPTION_2015 = WeightsSpec(
    name="inception-2015-12-05",
    url="http://download.tensorflow.org/models/image/imagenet/inception-2015-12-05.tgz",
    member="classify_image_graph_def.pb",
    archive_size=88_931_400,
    member_size=95_673_916,
)


def cache_dir(path: str | os.PathLike | None = None) -> Path:
    """lipgan's cache dir: the argument, else ``$LIPGAN_CACHE``, else ``$XDG_CACHE_HOME/lipgan``,
    else ``~/.cache/lipgan``."""
    if path or os.environ.get(CACHE_ENV):
        return Path(path or os.environ[CACHE_ENV]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "lipgan"


def cached_path(spec: WeightsSpec = INCEPTION_2015, cache: str | os.PathLike | None = None) -> Path:
    """Where ``spec``'s file is kept in the cache (whether or not it is there yet)."""
    return cache_dir(cache) / spec.name / spec.member


def weights_path(
    spec: WeightsSpec = INCEPTION_2015,
    local: str | os.PathLike | None = None,
    cache: str | os.PathLike | None = None,
    download: bool = True,
) -> Path:
    """The path of ``spec``'s file, downloading it into the cache on first use.

    Args:
        local: a local copy to use (the file itself, or the archive it comes in); default
            ``$LIPGAN_INCEPTION_GRAPH``. A missing or wrong local copy is an error, not a reason
            to download.
        cache: the cache dir (see :func:`cache_dir`).
        download: False refuses to download (the error says where to put the file).

    Raises:
        WeightsError: one line naming the file, the URL and where to put it.
    """
    named_by = "the local copy" if local else f"${GRAPH_ENV}"
    local = local or os.environ.get(GRAPH_ENV)
    target = cached_path(spec, cache)
    if local:
        local = Path(local).expanduser()
        if not local.is_file():
            raise WeightsError(f"{named_by} names {local}, which is not a file")
        if not tarfile.is_tarfile(local):
            _check_size(local, spec.member_size, f"{local}")
            return local
        if not target.is_file():
            _install_from_archive(local, spec, target)
        _check_size(target, spec.member_size, f"cached {target} (delete it to extract again)")
        return target
    if target.is_file():
        _check_size(target, spec.member_size, f"cached {target} (delete it to download again)")
        return target
    where = _where_to_put(spec, target)
    if not download:
        raise WeightsError(f"{spec.member} is not in the cache and downloading is off: {where}")
    unreachable = _unreachable(spec.url)
    if unreachable:
        raise WeightsError(f"cannot download {spec.member} ({unreachable}): {where}")
    _download(spec, target, where)
    return target


def _where_to_put(spec: WeightsSpec, target: Path) -> str:
    return (
        f"download {spec.url} where there is network and put {spec.member} from inside it at "
        f"{target} (or set {GRAPH_ENV} to the file or the archive)"
    )


def _unreachable(url: str) -> str | None:
    """Why the URL's host does not accept a connection within :data:`CONNECT_TIMEOUT`, if not.

    The name lookup and the connection run in a daemon thread that is waited for at most that
    long: a socket timeout does not bound the lookup, which on a machine without network can
    wait for its resolvers for many seconds.
    """
    parts = urlsplit(url)
    if parts.scheme == "file":
        return None
    address = (parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    outcome = []

    def connect():
        try:
            socket.create_connection(address, timeout=CONNECT_TIMEOUT).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(exc.strerror or str(exc) or type(exc).__name__)

    worker = threading.Thread(target=connect, daemon=True, name="lipgan-weights-connect")
    worker.start()
    worker.join(CONNECT_TIMEOUT + 0.5)
    reason = outcome[0] if outcome else f"no answer within {CONNECT_TIMEOUT:g} s"
    return f"{address[0]}:{address[1]}: {reason}" if reason else None


def _check_size(path: Path, expected: int | None, what: str) -> None:
    if expected is not None and path.stat().st_size != expected:
        raise WeightsError(
            f"{what} has {path.stat().st_size:,} bytes, not the {expected:,} of the published file"
        )


@contextlib.contextmanager
def _temporary(folder: Path, suffix: str):
    """A temporary file in ``folder`` (so that ``os.replace`` into it is atomic), always removed."""
    folder.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=".partial-", suffix=suffix, dir=folder)
    os.close(handle)
    try:
        yield Path(name)
    finally:
        Path(name).unlink(missing_ok=True)


def _download(spec: WeightsSpec, target: Path, where: str) -> None:
    import urllib.request

    with _temporary(target.parent, ".tgz") as archive:
        try:
            with urllib.request.urlopen(spec.url, timeout=CONNECT_TIMEOUT) as response:
                with archive.open("wb") as out:
                    while chunk := response.read(1 << 20):
                        out.write(chunk)
        except OSError as exc:  # URLError, HTTPError, timeouts and disk errors are all OSErrors
            reason = getattr(exc, "reason", None) or exc.strerror or exc
            raise WeightsError(f"downloading {spec.url} failed ({reason}): {where}") from None
        _check_size(archive, spec.archive_size, f"the download of {spec.url}")
        _install_from_archive(archive, spec, target)


def _install_from_archive(archive: Path, spec: WeightsSpec, target: Path) -> None:
    """Extract ``spec.member`` from ``archive`` to ``target``, checked, in one atomic step."""
    with _temporary(target.parent, ".pb") as extracted:
        try:
            with tarfile.open(archive) as tar:
                member = next(
                    (m for m in tar.getmembers() if Path(m.name).name == spec.member), None
                )
                if member is None or not member.isfile():
                    raise WeightsError(f"{archive} holds no {spec.member}")
                with tar.extractfile(member) as source, extracted.open("wb") as out:
                    while chunk := source.read(1 << 20):
                        out.write(chunk)
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise WeightsError(
                f"cannot read {archive} as the archive of {spec.url}: {exc}"
            ) from None
        _check_size(extracted, spec.member_size, f"{spec.member} in {archive}")
        os.replace(extracted, target)
