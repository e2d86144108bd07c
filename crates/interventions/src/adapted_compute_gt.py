#!/usr/bin/env python3
"""compute_gt.py adapted by `earthverse perturb --kind unit-change` (App. A.3.3).

One series (or one value whose key names its unit) of this task's package
was converted to a physically equivalent unit (see the task's
perturbations/<task_id>.json). The ground truth stays in
the question's units, so this prelude converts the series back when the
original program decodes the changed document with Python's json module,
then runs the original program, verbatim, in this module.
"""

import json as _earthverse_json

_EARTHVERSE_CHANGE = _earthverse_json.loads(@CHANGE@)
_EARTHVERSE_PROGRAM = @PROGRAM@
_earthverse_loads = _earthverse_json.loads


def _earthverse_is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _earthverse_restore(values, c):
    integers = set(c["integer_positions"])
    restored = []
    for i, x in enumerate(values):
        if _earthverse_is_number(x):
            y = round((x - c["offset"]) / c["factor"], c["decimals"])
            restored.append(int(round(y)) if i in integers else y)
        else:
            restored.append(x)
    return restored


def _earthverse_matches(values, c):
    if len(values) != c["length"]:
        return False
    total = sum(x for x in values if _earthverse_is_number(x))
    return abs(total - c["converted_sum"]) <= 1e-6 * max(1.0, abs(c["converted_sum"]))


def _earthverse_revert_key(document, c):
    """A unit written in a key's name: the renamed key converted back, in place."""
    holder = document
    for part in [p for p in c["block"].split(".") if p]:
        if not isinstance(holder, dict) or part not in holder:
            return document
        holder = holder[part]
    new = c["renamed_to"]
    if not isinstance(holder, dict) or new not in holder or c["variable"] in holder:
        return document
    value = holder[new]
    values = value if isinstance(value, list) else [value]
    if not _earthverse_matches(values, c):
        return document
    restored = _earthverse_restore(values, c)
    restored = restored if isinstance(value, list) else restored[0]
    items = [(k, v) for k, v in holder.items() if k != new]
    items.insert(min(c["key_position"], len(items)), (c["variable"], restored))
    holder.clear()
    holder.update(items)
    return document


def _earthverse_revert(document):
    """The changed document with its series converted back; anything else unchanged."""
    c = _EARTHVERSE_CHANGE
    if c.get("text_original") is not None:
        return document
    if c.get("renamed_to"):
        return _earthverse_revert_key(document, c)
    if not isinstance(document, dict):
        return document
    units = document.get(c["block"] + "_units")
    block = document.get(c["block"])
    if not isinstance(units, dict) or not isinstance(block, dict):
        return document
    series = block.get(c["variable"])
    if units.get(c["variable"]) != c["to"] or not isinstance(series, list):
        return document
    if not _earthverse_matches(series, c):
        return document
    block[c["variable"]] = _earthverse_restore(series, c)
    units[c["variable"]] = c["from"]
    return document


def _earthverse_patched_loads(s, *args, **kwargs):
    # json.load(fp) calls the module's loads, so both are covered.
    return _earthverse_revert(_earthverse_loads(s, *args, **kwargs))


_earthverse_json.loads = _earthverse_patched_loads

if _EARTHVERSE_CHANGE.get("text_original") is not None:
    # A measurement in a text document: the file reads with the original
    # text back in place (text or bytes mode), through open() and pathlib.
    import builtins as _earthverse_builtins
    import io as _earthverse_io
    import os as _earthverse_os

    _earthverse_open = _earthverse_io.open

    def _earthverse_patched_open(file, mode="r", *args, **kwargs):
        handle = _earthverse_open(file, mode, *args, **kwargs)
        if isinstance(file, int) or any(m in mode for m in "wax+"):
            return handle
        try:
            real = _earthverse_os.path.realpath(_earthverse_os.fsdecode(file))
        except (TypeError, ValueError):
            return handle
        if not real.endswith("/" + _EARTHVERSE_CHANGE["file"]):
            return handle
        c = _EARTHVERSE_CHANGE
        data = handle.read()
        handle.close()
        if isinstance(data, bytes):
            data = data.replace(c["text_converted"].encode("utf-8"), c["text_original"].encode("utf-8"))
            return _earthverse_io.BytesIO(data)
        return _earthverse_io.StringIO(data.replace(c["text_converted"], c["text_original"]))

    _earthverse_builtins.open = _earthverse_patched_open
    _earthverse_io.open = _earthverse_patched_open
exec(compile(_EARTHVERSE_PROGRAM, __file__, "exec"), globals())
