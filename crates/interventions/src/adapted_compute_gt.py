#!/usr/bin/env python3
"""compute_gt.py adapted by `earthverse perturb --kind unit-change` (App. A.3.3).

One series of this event's package was converted to a physically equivalent
unit (see the event's perturbations/<event>.json). The ground truth stays in
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


def _earthverse_revert(document):
    """The changed document with its series converted back; anything else unchanged."""
    c = _EARTHVERSE_CHANGE
    if not isinstance(document, dict):
        return document
    units = document.get(c["block"] + "_units")
    block = document.get(c["block"])
    if not isinstance(units, dict) or not isinstance(block, dict):
        return document
    series = block.get(c["variable"])
    if units.get(c["variable"]) != c["to"] or not isinstance(series, list):
        return document
    if len(series) != c["length"]:
        return document
    total = sum(x for x in series if _earthverse_is_number(x))
    if abs(total - c["converted_sum"]) > 1e-6 * max(1.0, abs(c["converted_sum"])):
        return document
    integers = set(c["integer_positions"])
    restored = []
    for i, x in enumerate(series):
        if _earthverse_is_number(x):
            y = round((x - c["offset"]) / c["factor"], c["decimals"])
            restored.append(int(round(y)) if i in integers else y)
        else:
            restored.append(x)
    block[c["variable"]] = restored
    units[c["variable"]] = c["from"]
    return document


def _earthverse_patched_loads(s, *args, **kwargs):
    # json.load(fp) calls the module's loads, so both are covered.
    return _earthverse_revert(_earthverse_loads(s, *args, **kwargs))


_earthverse_json.loads = _earthverse_patched_loads
exec(compile(_EARTHVERSE_PROGRAM, __file__, "exec"), globals())
