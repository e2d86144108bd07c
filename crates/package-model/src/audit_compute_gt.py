# Runs a task's compute_gt.py under a Python audit hook (PEP 578) and
# records what the reference analysis really reads: every file it opens
# (the `open` audit event, path made canonical), and the keys it looks up
# in the JSON documents it decodes (json.load/json.loads return dicts that
# log `[]` and `.get`). Written by earthverse's package-model
# (`reference_reads`); the program itself runs unchanged, as `__main__`,
# with its own path as `__file__`.
#
# Environment:
#   EARTHVERSE_AUDIT_OUT   where to write the record (JSON)
#   EARTHVERSE_AUDIT_DENY  a canonical path whose opening fails with
#                          FileNotFoundError, as if the file were missing
#   EARTHVERSE_AUDIT_ALTER a canonical path whose JSON content decodes
#                          altered: every number x becomes x * 1.5 (0
#                          becomes 1) and every string gains a "~", so a
#                          program whose answer is the same did not use the
#                          file's values (it only checked or rejected it)
#   EARTHVERSE_AUDIT_KEYS  "0" to decode JSON with plain dicts (no key log)
import json
import os
import runpy
import sys

_OUT = os.environ.pop("EARTHVERSE_AUDIT_OUT")
_DENY = os.environ.pop("EARTHVERSE_AUDIT_DENY", "")
_ALTER = os.environ.pop("EARTHVERSE_AUDIT_ALTER", "")
_TRACK_KEYS = os.environ.pop("EARTHVERSE_AUDIT_KEYS", "1") != "0"
_opened = []
_seen = set()
_keys = []
_key_seen = set()
_current = [None]


def _hook(event, args):
    if event != "open" or not args:
        return
    path = args[0]
    if isinstance(path, int):
        return
    try:
        real = os.path.realpath(os.fsdecode(path))
    except Exception:
        return
    if real not in _seen:
        _seen.add(real)
        _opened.append(real)
    if real.endswith(".json") or real.endswith(".geojson"):
        _current[0] = real
    if _DENY and real == _DENY:
        raise FileNotFoundError(2, "No such file or directory", os.fsdecode(path))


sys.addaudithook(_hook)


class _Tracked(dict):
    """A decoded JSON object that logs the keys the program looks up."""

    __slots__ = ("_ev_source", "_ev_path")

    def _ev_log(self, key):
        source = getattr(self, "_ev_source", None)
        if source is None or not isinstance(key, str):
            return
        path = getattr(self, "_ev_path", "")
        entry = (source, path + "." + key if path else key)
        if entry not in _key_seen:
            _key_seen.add(entry)
            _keys.append(entry)

    def __getitem__(self, key):
        self._ev_log(key)
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        self._ev_log(key)
        return dict.get(self, key, default)


def _annotate(value, source, path):
    if isinstance(value, _Tracked):
        value._ev_source = source
        value._ev_path = path
        for k, v in dict.items(value):
            _annotate(v, source, path + "." + k if path else k)
    elif isinstance(value, list):
        for item in value:
            _annotate(item, source, path + "[]" if path else "[]")


def _alter(value):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        changed = value * 1.5 if value != 0 else 1
        return type(value)(changed) if isinstance(value, int) else changed
    if isinstance(value, str):
        return value + "~"
    if isinstance(value, list):
        return [_alter(v) for v in value]
    if isinstance(value, dict):
        altered = type(value)()
        for k, v in dict.items(value):
            dict.__setitem__(altered, k, _alter(v))
        return altered
    return value


_original_loads = json.loads
_original_load = json.load


def _loads(s, *args, **kwargs):
    if args or kwargs:
        return _original_loads(s, *args, **kwargs)
    if _TRACK_KEYS:
        value = _original_loads(s, object_pairs_hook=_Tracked)
    else:
        value = _original_loads(s)
    if _ALTER and _current[0] == _ALTER:
        value = _alter(value)
    if _TRACK_KEYS and _current[0] is not None:
        _annotate(value, _current[0], "")
    return value


def _load(fp, *args, **kwargs):
    name = getattr(fp, "name", None)
    if isinstance(name, (str, bytes)):
        try:
            _current[0] = os.path.realpath(os.fsdecode(name))
        except Exception:
            pass
    return _loads(fp.read(), *args, **kwargs)


json.loads = _loads
json.load = _load


def _write():
    record = {"opened": _opened, "keys": [list(k) for k in _keys]}
    with open(_OUT, "w", encoding="utf-8") as handle:
        json.dump(record, handle)


program = os.path.abspath(sys.argv[1])
sys.argv = [program] + sys.argv[2:]
sys.path.insert(0, os.path.dirname(program))
try:
    runpy.run_path(program, run_name="__main__")
except SystemExit as stop:
    _write()
    raise
except BaseException:
    _write()
    raise
_write()
