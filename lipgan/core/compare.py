"""The one comparison of two records (a run's settings, a run dir's stored data, a study cell):
:func:`differences`, key by key, in words a one-line refusal can quote.

A leaf module (no lipgan import): :mod:`lipgan.run.spec` builds the settings comparison on it, and
:mod:`lipgan.run.record`, :mod:`lipgan.run.description` and the study compare with it directly.
"""

from __future__ import annotations

import json


def flat(data: dict, prefix: str = "") -> dict:
    """``{'constraint.weight': 10.0, ...}``: nested JSON as dotted keys (for diffs)."""
    out = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _under(key: str, prefixes) -> bool:
    return any(key == p or key.startswith(p + ".") for p in prefixes)


def differences(
    old: dict,
    new: dict,
    *,
    ignore: tuple[str, ...] = (),
    defaults: dict | None = None,
    optional: tuple[str, ...] = (),
) -> list[str]:
    """``['constraint.weight: 10.0 -> 1.0', ...]``: how two JSON records differ, key by key.

    Args:
        old, new: the records (nested dicts of JSON values).
        ignore: keys (or dotted prefixes) that may differ.
        defaults: ``{dotted key: value}`` read where a record lacks the key (it predates it).
        optional: prefixes compared only when both records hold a non-null value under them.
    """
    old = flat(json.loads(json.dumps(old, sort_keys=True, default=repr)))
    new = flat(json.loads(json.dumps(new, sort_keys=True, default=repr)))
    for key, value in (defaults or {}).items():
        for record in (old, new):
            record.setdefault(key, value)
    diffs = []
    for key in sorted(set(old) | set(new)):
        if _under(key, ignore) or _not_held_by_both(key, old, new, optional):
            continue
        if old.get(key) != new.get(key):
            diffs.append(f"{key}: {old.get(key, '(unset)')} -> {new.get(key, '(unset)')}")
    return diffs


def _not_held_by_both(key: str, old: dict, new: dict, optional) -> bool:
    for prefix in optional:
        if _under(key, (prefix,)):
            held = [
                any(_under(k, (prefix,)) and v is not None for k, v in r.items())
                for r in (old, new)
            ]
            return not all(held)
    return False
