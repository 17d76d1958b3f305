"""``lipgan sample``'s ``.npz``, written from chunks of samples in bounded memory.

``np.savez`` needs the whole array: ten million 2-D samples are 80 MB of float32, and the
generator's outputs and the noise several times that. An ``.npz`` is a zip of ``.npy`` files, so
the ``samples`` member is streamed instead: the ``.npy`` header (which needs only the final shape),
then each chunk's bytes as it is generated (:func:`lipgan.metrics.evaluation.generate_chunks`). The
file is written under a temporary name and renamed, so a failed or interrupted write leaves nothing
half-written. ``np.load`` reads it as it reads ``np.savez``'s.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np


def write_npz(path: Path, chunks: Iterable[np.ndarray], shape: tuple, **scalars) -> None:
    """Write ``path`` with the member ``samples`` (float32 of ``shape``, the ``chunks`` joined in
    order) and one member per keyword; the chunks must hold ``shape[0]`` examples in all."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            with archive.open("samples.npy", "w", force_zip64=True) as member:
                header = {"descr": "<f4", "fortran_order": False, "shape": tuple(shape)}
                np.lib.format.write_array_header_1_0(member, header)
                written = 0
                for chunk in chunks:
                    member.write(np.ascontiguousarray(chunk, "<f4").tobytes())
                    written += len(chunk)
                if written != shape[0]:
                    raise ValueError(f"{written} samples written, {shape[0]} announced")
            for name, value in scalars.items():
                with archive.open(f"{name}.npy", "w") as member:
                    np.lib.format.write_array(member, np.asarray(value))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes(path: Path, data: bytes) -> None:
    """``path.write_bytes(data)`` through a temporary file and a rename."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
