"""A data set the user brings to a study or a tuned study: checked, named, held out and frozen.

``lipgan study --dataset PATH.npy|PATH.npz`` (and ``lipgan tune``), or ``run_study(..., data=)``
from Python with a NumPy array, a ``tf.data.Dataset`` or a TFDS name, as :class:`lipgan.Trainer`
takes them. An ``.npz`` holds the examples under ``x`` (or as its only array) and, optionally,
``modes`` (``[K, d]`` mode centres: PacGAN's mode metrics are then reported) and ``mode_std`` (the
std of one mode, for the high-quality radius of 3σ; default: estimated from the data, see
:func:`estimated_mode_std`). An ``.npy`` holds the examples alone.

What a user data set becomes, stated in the report and docs/study.md, "Your own data":

* **vectors** ``[n, d]``, 2 ≤ d ≤ :data:`MAX_VECTOR_DIM`, float: the toy MLP config
  (``wgangp_toy_quick.gin``, noise of ``max(2, d)`` dimensions);
* **images** ``[n, h, w]`` or ``[n, h, w, c]`` (c 1 or 3), square of side 8, 16, 32 or 64: the
  DCGAN config of ``wgangp_digits.gin``. Integer images map their dtype's range onto [-1, 1] as
  :mod:`lipgan.data.adapt` does (uint8 [0, 255], int8 [-128, 127], uint16, int16); float images
  must already lie in [-1, 1] (the generator's tanh range).

Anything else is refused in one line before anything is written. The data's name in the study is
its stem and a short hash of its content (:func:`content_hash`), so two different data sets never
share cells, and a study whose file changed is refused on resume (:func:`check_unchanged`).

A fixed shuffle holds out ``held_out`` rows (:func:`held_out_size`): the cells' W1 is measured
against them, and the W1 floor is the W1 of as many training rows to them
(:mod:`lipgan.study.own_metrics`). The checked data is frozen into ``OUT/data/<name>.npz``
(float32 ``train`` and ``held_out``, ``modes``, ``mode_std``, ``meta``), which the cells train on
(:func:`lipgan.data.array_file.array_file`) and the report reads.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
import shutil
from pathlib import Path

import numpy as np

from lipgan.core.errors import ConfigError

#: The examples' key in an ``.npz``; the optional mode centres and mode std.
X_KEY, MODES_KEY, MODE_STD_KEY = "x", "modes", "mode_std"
#: Vectors wider than this have no shipped config here (the toy MLP is sized for a few dims).
MAX_VECTOR_DIM = 64
#: Image sides the DCGAN config builds (4·2^n, lipgan.models.dcgan).
IMAGE_SIDES = (8, 16, 32, 64)
#: Fewest held-out rows: W1 on fewer points says little. The data needs three times as many.
MIN_HELD_OUT = 100
#: The integer dtypes taken as images and the range of each mapped onto [-1, 1]; the same table
#: as :data:`lipgan.data.adapt.INTEGER_RANGES` (tests/test_own_data.py checks they agree), kept
#: here in NumPy terms so that a bad file is refused before TensorFlow is imported.
INTEGER_RANGES = {
    np.dtype(np.uint8): (0, 255),
    np.dtype(np.uint16): (0, 65535),
    np.dtype(np.int8): (-128, 127),
    np.dtype(np.int16): (-32768, 32767),
}
#: The shipped config each kind of data trains with.
CONFIGS = {"vectors": "wgangp_toy_quick.gin", "images": "wgangp_digits.gin"}
#: :data:`lipgan.metrics.evaluation.EXACT_W1_MAX_TERMS` (that module imports TensorFlow; a test checks
#: they agree): the most n²·d terms of an exact W1.
EXACT_W1_MAX_TERMS = 2048 * 2048 * 64
#: The seed of the one shuffle that splits every user data set into training and held-out rows.
SPLIT_SEED = 0x5B17
#: Where a study dir keeps its frozen copies (and the env variable that tells a cell).
DATA_DIR = "data"
DATA_ENV = "LIPGAN_STUDY_DATA"


@dataclasses.dataclass(frozen=True)
class OwnData:
    """What a study records of a user data set (``spec.json``'s ``data``)."""

    name: str
    source: str
    sha256: str
    kind: str
    shape: tuple[int, ...]
    rows: int
    held_out: int
    modes: int = 0

    @property
    def config(self) -> str:
        return CONFIGS[self.kind]

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "shape": list(self.shape)}


def is_path(value: str) -> bool:
    """Whether a ``--dataset`` value names a file (``.npy``/``.npz``) rather than a named set."""
    return value.lower().endswith((".npy", ".npz"))


def _fail(where: str, why: str):
    raise ConfigError(f"{where}: {why}")


def read_file(path: str | Path) -> dict:
    """``{'x', 'modes'?, 'mode_std'?}`` of an ``.npy``/``.npz`` file, or one line why not."""
    path = Path(path)
    where = f"--dataset {path}"
    if not path.exists():
        _fail(where, "no such file")
    if not path.is_file():
        _fail(where, "not a file")
    try:
        loaded = np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - OSError, ValueError, EOFError, BadZipFile...
        why = (str(exc).splitlines() or [type(exc).__name__])[0]
        _fail(where, f"not a readable .npy/.npz ({why})")
    if isinstance(loaded, np.ndarray):
        return {X_KEY: loaded}
    with loaded:
        keys = list(loaded.files)
        alone = keys[0] if len(keys) == 1 and keys[0] not in (MODES_KEY, MODE_STD_KEY) else None
        key = X_KEY if X_KEY in keys else alone
        if key is None:
            _fail(
                where,
                f"holds arrays {', '.join(keys) or '(none)'}; put the examples under "
                f"'{X_KEY}' (optional: '{MODES_KEY}' [K, d] mode centres, '{MODE_STD_KEY}')",
            )
        try:
            out = {X_KEY: loaded[key]}
            for extra in (MODES_KEY, MODE_STD_KEY):
                if extra in keys and extra != key:
                    out[extra] = loaded[extra]
        except Exception as exc:  # noqa: BLE001 - a pickle np.load refuses, a damaged member
            why = (str(exc).splitlines() or [type(exc).__name__])[0]
            _fail(where, f"not plain numbers, or damaged ({why})")
    return out


def to_float32(x: np.ndarray, where: str) -> tuple[np.ndarray, str]:
    """(the examples as float32, their kind), with integer images mapped by dtype, or one line."""
    if x.dtype == bool or not (
        np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer)
    ):
        _fail(where, f"examples of dtype {x.dtype}; give float or integer (image) numbers")
    if x.ndim == 2:
        kind = "vectors"
        d = x.shape[1]
        if not 2 <= d <= MAX_VECTOR_DIM:
            _fail(
                where,
                f"vectors of {d} dimension(s); the toy MLP config takes 2 to {MAX_VECTOR_DIM}",
            )
        if np.issubdtype(x.dtype, np.integer):
            _fail(where, f"integer vectors ({x.dtype}); cast them: x.astype('float32')")
    elif x.ndim in (3, 4):
        kind = "images"
        if x.ndim == 3:
            x = x[..., None]
        _, h, w, c = x.shape
        if h != w or h not in IMAGE_SIDES or c not in (1, 3):
            _fail(
                where,
                f"images of shape {h}x{w}x{c}; the DCGAN config takes square sides "
                f"{', '.join(map(str, IMAGE_SIDES))} with 1 or 3 channels: resize them",
            )
        if np.issubdtype(x.dtype, np.integer):
            if x.dtype not in INTEGER_RANGES:
                _fail(
                    where,
                    f"integer images of dtype {x.dtype} have no agreed range; cast them to uint8 "
                    "([0, 255]) or to float32 in [-1, 1]",
                )
            low, high = INTEGER_RANGES[x.dtype]
            return ((x.astype(np.float32) - low) * (2.0 / (high - low)) - 1.0), kind
    else:
        _fail(
            where,
            f"an array of shape {x.shape} (rank {x.ndim}); give vectors [n, d] or images "
            "[n, h, w] / [n, h, w, c]",
        )
    x = x.astype(np.float32)
    bad = int(np.size(x) - np.count_nonzero(np.isfinite(x)))
    if bad:
        _fail(where, f"{bad} non-finite value(s) (NaN or inf); drop or fix those rows")
    if len(x) and (x == x[:1]).all():
        _fail(where, "every row is the same; there is no distribution to learn")
    if kind == "images" and (x.min() < -1.0 - 1e-6 or x.max() > 1.0 + 1e-6):
        _fail(
            where,
            f"float images in [{x.min():.3g}, {x.max():.3g}]; the generator's tanh output lies in "
            "[-1, 1]: scale them (x / 127.5 - 1 for [0, 255]), or pass uint8",
        )
    return x, kind


def held_out_size(rows: int, dims: int, eval_samples: int) -> int:
    """Rows held out: the evaluation's sample count, at most a third of the data (so that the
    floor's draws of as many training rows differ from one another), and at most what an
    exact W1 affords at this dimension (:data:`EXACT_W1_MAX_TERMS`), so that every W1 of a user
    data set is exact and its rows compare with its floor."""
    affordable = int(math.isqrt(EXACT_W1_MAX_TERMS // dims))
    return min(eval_samples, rows // 3, affordable)


def content_hash(x: np.ndarray, modes, mode_std) -> str:
    """sha256 over the examples (dtype, shape, bytes) and the modes: the data's identity."""
    h = hashlib.sha256()
    for part in (x, modes, mode_std):
        if part is None:
            h.update(b"-")
            continue
        part = np.ascontiguousarray(part)
        h.update(f"{part.dtype.str}{part.shape}".encode())
        h.update(part.tobytes())
    return h.hexdigest()


def estimated_mode_std(x: np.ndarray, modes: np.ndarray) -> float:
    """The std of one mode when none is given: the root mean square distance of the points to
    their nearest centre, per coordinate (for an isotropic Gaussian mixture, its σ)."""
    from lipgan.metrics.toy import nearest_mode

    _, dist = nearest_mode(x[: min(len(x), 20_000)], modes)
    return float(np.sqrt(np.mean(dist**2) / x.shape[1]))


def _check_modes(modes, mode_std, x: np.ndarray, kind: str, where: str):
    if modes is None:
        if mode_std is not None:
            _fail(where, f"'{MODE_STD_KEY}' without '{MODES_KEY}'; give the mode centres too")
        return None, None
    modes = np.asarray(modes)
    if kind != "vectors":
        _fail(where, "mode centres are for vectors; images have no mode metrics here")
    if modes.ndim != 2 or modes.shape[1] != x.shape[1] or len(modes) < 1:
        _fail(
            where, f"'{MODES_KEY}' of shape {modes.shape}; expected [K, {x.shape[1]}] mode centres"
        )
    if not np.issubdtype(modes.dtype, np.number) or not np.isfinite(modes).all():
        _fail(where, f"'{MODES_KEY}' holds non-finite or non-numeric values")
    modes = modes.astype(np.float64)
    if mode_std is None:
        return modes, estimated_mode_std(x, modes)
    std = np.asarray(mode_std)
    if std.size != 1 or not np.issubdtype(std.dtype, np.number):
        _fail(where, f"'{MODE_STD_KEY}' must be one positive number, got shape {std.shape}")
    std = float(std.reshape(()))
    if not (math.isfinite(std) and std > 0):
        _fail(where, f"'{MODE_STD_KEY}' must be one positive number, got {std}")
    return modes, std


def python_arrays(data, data_key: str | None = None) -> np.ndarray:
    """A NumPy array of the examples of ``data`` as :class:`lipgan.Trainer` takes it: an array,
    a ``tf.data.Dataset`` (of examples, batches or dicts; :mod:`lipgan.data.adapt`) or a TFDS
    name (:func:`lipgan.data.pipeline.load_examples`: images scaled to [-1, 1])."""
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, str):
        from lipgan.data.pipeline import load_examples

        data = load_examples(data)
    from lipgan.data.adapt import examples

    ds = examples(data, data_key)  # float32, integers scaled by dtype, one-line errors
    return np.concatenate(list(ds.batch(4096).as_numpy_iterator()))


def _stem(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "data"


def load(
    data,
    *,
    eval_samples: int,
    name: str | None = None,
    modes=None,
    mode_std=None,
    data_key: str | None = None,
) -> tuple[OwnData, dict]:
    """(the description, ``{'train', 'held_out', 'modes', 'mode_std'}``) of a user data set, or
    one-line :class:`ConfigError`. ``data``: a ``.npy``/``.npz`` path, an array, a
    ``tf.data.Dataset`` or a TFDS name; ``name`` the stem of its study name (default: the file's
    stem, the TFDS name, or ``data``); ``modes``/``mode_std`` as the ``.npz`` keys."""
    if isinstance(data, (str, os.PathLike)) and (isinstance(data, os.PathLike) or is_path(data)):
        path = Path(data).absolute()
        found = read_file(path)
        x, source, stem = found[X_KEY], str(path), path.stem
        modes = found.get(MODES_KEY, modes)
        mode_std = found.get(MODE_STD_KEY, mode_std)
        where = f"--dataset {data}"
    else:
        source = data if isinstance(data, str) else type(data).__name__
        stem = data.split(":")[0].replace("/", "_") if isinstance(data, str) else "data"
        where = f"data ({source})"
        x = python_arrays(data, data_key)
    x, kind = to_float32(np.asarray(x), where)
    modes, mode_std = _check_modes(modes, mode_std, x, kind, where)
    dims = int(np.prod(x.shape[1:]))
    held = held_out_size(len(x), dims, eval_samples)
    if held < MIN_HELD_OUT:
        _fail(
            where,
            f"{len(x)} rows are too few for a held-out split: W1 is measured on >= "
            f"{MIN_HELD_OUT} held-out rows, a third of the data at most, so give >= "
            f"{3 * MIN_HELD_OUT} rows",
        )
    digest = content_hash(x, modes, None if mode_std is None else np.float64(mode_std))
    own = OwnData(
        name=f"{_stem(name or stem)}-{digest[:8]}",
        source=source,
        sha256=digest,
        kind=kind,
        shape=tuple(int(s) for s in x.shape[1:]),
        rows=len(x),
        held_out=held,
        modes=0 if modes is None else len(modes),
    )
    order = np.random.default_rng(SPLIT_SEED).permutation(len(x))
    arrays = {"train": x[order[held:]], "held_out": x[order[:held]]}
    if modes is not None:
        arrays.update(modes=modes, mode_std=np.float64(mode_std))
    return own, arrays


def frozen_path(out: Path, name: str) -> Path:
    return Path(out) / DATA_DIR / f"{name}.npz"


def study_file(out: Path, dataset: str) -> Path | None:
    """The frozen copy of a user data set in the study dir ``out``, None for a named set (only
    :func:`freeze` writes there, under a name with a content hash no named set has)."""
    path = frozen_path(out, dataset)
    return path if path.is_file() else None


def freeze(dirs, own: OwnData, arrays: dict) -> None:
    """Write the checked data to ``DIR/data/<name>.npz`` of the first of ``dirs`` (atomically,
    unless the same data is there) and link it into the others (a tuned study's search/ and
    final/ run cells from their own dir)."""
    first, *others = [Path(d) for d in dirs]
    path = frozen_path(first, own.name)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp.npz")
        meta = json.dumps(own.as_dict())
        np.savez(tmp, meta=np.asarray(meta), **arrays)
        os.replace(tmp, path)
    for other in others:
        target = frozen_path(other, own.name)
        if target.is_file():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
        except OSError:  # another file system: a copy
            shutil.copyfile(path, target)


def check_unchanged(out: Path, data: tuple[OwnData, ...]) -> None:
    """One line when ``out``'s study was begun on a data set from the same source whose content
    differs now (a file edited since): resuming would mix two data sets in one report."""
    try:
        recorded = json.loads((Path(out) / "spec.json").read_text()).get("data") or []
    except (OSError, ValueError, AttributeError):
        return
    for own in data:
        for old in recorded:
            if not isinstance(old, dict):
                continue
            if old.get("source") == own.source and old.get("sha256") != own.sha256:
                raise ConfigError(
                    f"{own.source} changed since the study in {out} began (content "
                    f"{str(old.get('sha256'))[:8]} then, {own.sha256[:8]} now); restore it, or "
                    "use another --out for the new data"
                )


def read_frozen(path: Path) -> tuple[dict, dict]:
    """(meta, arrays) of a frozen copy, or one line when the study's copy is not there."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"the study's copy of its data set is not readable at {path} "
            f"({(str(exc).splitlines() or [''])[0]}); run the study command again"
        ) from None
    return json.loads(str(arrays.pop("meta"))), arrays


def cell_data_path(name: str, folder=None) -> Path:
    """The frozen copy a cell trains on: ``folder/<name>.npz``, by default in
    ``$LIPGAN_STUDY_DATA`` (which the runner sets for each cell)."""
    folder = folder or os.environ.get(DATA_ENV)
    if not folder:
        raise ConfigError(
            f"unknown study data set {name!r}: not a named set, and no {DATA_ENV} folder "
            "holds a user data set of that name"
        )
    return Path(folder) / f"{name}.npz"


def cell_config(name: str, folder=None) -> tuple[str, list[str]]:
    """(gin config, data bindings) of a cell on the user data set ``name``."""
    path = cell_data_path(name, folder).absolute()
    meta, _ = read_frozen(path)
    bindings = ["train.data = @array_file()", f"array_file.path = {str(path)!r}"]
    if meta["kind"] == "vectors":
        bindings.append(f"mlp_generator.latent_dim = {max(2, int(meta['shape'][0]))}")
    return CONFIGS[meta["kind"]], bindings


def attach(spec, data, **options) -> tuple:
    """(``spec`` with the user data sets of ``data`` added to its ``datasets`` and ``data``, the
    checked ``[(OwnData, arrays)]``). ``data``: one source (a path, an array, a
    ``tf.data.Dataset``, a TFDS name) or a list of them; ``options`` go to :func:`load`. Nothing
    is written: :func:`freeze` does that once the study dir is accepted."""
    if data is None:
        return spec, []
    sources = list(data) if isinstance(data, (list, tuple)) else [data]
    loaded = [load(source, eval_samples=spec.eval_samples, **options) for source in sources]
    names = [own.name for own, _ in loaded]
    known = {own.name for own in spec.data}
    added = tuple(own for own, _ in loaded if own.name not in known)
    datasets = tuple(dict.fromkeys((*spec.datasets, *names)))
    return dataclasses.replace(spec, datasets=datasets, data=(*spec.data, *added)), loaded


def freezer(loaded: list, dirs) -> callable:
    """``prepare`` for :func:`lipgan.study.runner.run_cells`: freeze every loaded data set into
    ``dirs`` (a study dir, and a separate Ray storage dir where cells run)."""

    def prepare() -> None:
        for own, arrays in loaded:
            try:
                freeze([d for d in dirs if d is not None], own, arrays)
            except OSError as exc:
                raise ConfigError(
                    f"cannot write the study's copy of {own.name} under {dirs[0]} "
                    f"({exc.strerror or exc}); pick a writable --out"
                ) from None

    return prepare
