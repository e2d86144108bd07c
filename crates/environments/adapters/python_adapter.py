"""EarthVerse adapter over the Python scientific libraries of Table 14
(paper App. A.4, D.6): MetPy, xclim, thermofeel, PyET, climate-indices,
xskillscore, pyextremes.

Run inside the python_exec sandbox as `python -I -u python_adapter.py
REQUEST.json`. The request holds the operation, its input series (values,
ISO time labels, units, and the package file and field they came from) and
its parameters. The adapter builds the library's own inputs (pint
quantities, xarray DataArrays with units, pandas Series with a
DatetimeIndex), calls the library and prints one JSON object:

  {"status": "ok", "library": NAME, "version": V, "result": {...}}
  {"status": "error", "failure_class": CLASS, "message": TEXT}

with CLASS one of `adapter` (the library cannot be imported or the
operation is unknown), `argument` (a parameter is invalid),
`input_incompatibility` (the package series cannot feed the method: too
short, wrong sampling, missing variable) or `runtime` (the library raised).
There is no fallback: every number comes from the library.
"""
import json
import math
import sys
import warnings

warnings.filterwarnings("ignore")


class Failure(Exception):
    def __init__(self, failure_class, message):
        super().__init__(message)
        self.failure_class = failure_class


def incompatible(message):
    return Failure("input_incompatibility", message)


def bad_argument(message):
    return Failure("argument", message)


def finite(x):
    x = float(x)
    return x if math.isfinite(x) else None


def stats(values):
    import numpy as np

    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        raise incompatible("the method returned no finite value for these inputs")
    return {"mean": float(a.mean()), "min": float(a.min()), "max": float(a.max()), "n": int(a.size)}


def series(req, name, required=True):
    s = req["inputs"].get(name)
    if s is None:
        if required:
            raise incompatible(f"input `{name}` is required")
        return None
    if len(s["values"]) == 0:
        raise incompatible(f"input `{name}` ({s.get('file')}: {s.get('field')}) holds no value")
    return s


def array(s):
    import numpy as np

    return np.array([np.nan if v is None else v for v in s["values"]], dtype=float)


def param(req, name, default=None):
    v = req["params"].get(name)
    return default if v is None else v


def time_index(s):
    import pandas as pd

    if not s.get("times"):
        raise incompatible(f"input from {s.get('file')}: {s.get('field')} has no time axis (give `time_field`)")
    try:
        return pd.DatetimeIndex(pd.to_datetime(s["times"]))
    except Exception as e:  # noqa: BLE001
        raise incompatible(f"time labels of {s.get('file')} do not parse as dates: {e}")


def pd_series(s):
    import pandas as pd

    return pd.Series(array(s), index=time_index(s))


def require_daily(s, method):
    import pandas as pd

    idx = time_index(s)
    if len(idx) < 2:
        raise incompatible(f"{method} needs a daily series of at least 2 days; {s.get('field')} has {len(idx)}")
    step = pd.Series(idx).diff().dropna().median()
    if step != pd.Timedelta("1D"):
        raise incompatible(f"{method} needs daily values; {s.get('field')} is sampled every {step}")
    return idx


def data_array(s, units, method):
    import xarray as xr

    idx = require_daily(s, method)
    return xr.DataArray(array(s), dims="time", coords={"time": idx}, attrs={"units": units})


def unit_of(s, default):
    u = s.get("units") or default
    return {"°C": "degC", "°F": "degF", "%": "percent", "mm/day": "mm/d"}.get(u, u)


# ---------------------------------------------------------------- MetPy
def metpy_rain_summary(req):
    import numpy as np
    from metpy.units import units

    s = series(req, "precipitation")
    q = units.Quantity(array(s), unit_of(s, "mm")).to("mm")
    thr = units.Quantity(float(param(req, "threshold_mm", 0.1)), "mm")
    valid = np.isfinite(q.magnitude)
    if not valid.any():
        raise incompatible("no finite precipitation value")
    wet = q[valid] >= thr
    return {
        "total_mm": float(np.nansum(q.magnitude)),
        "max_mm": float(np.nanmax(q.magnitude)),
        "wet_steps": int(wet.sum()),
        "steps": int(valid.sum()),
    }


def metpy_profile(req):
    import metpy.calc as mpcalc
    from metpy.units import units

    t = series(req, "temperature")
    rh = series(req, "relative_humidity")
    T = units.Quantity(array(t), unit_of(t, "degC"))
    RH = units.Quantity(array(rh), unit_of(rh, "percent"))
    if len(T) != len(RH):
        raise incompatible("temperature and relative_humidity differ in length")
    out = {"dewpoint_degC": stats(mpcalc.dewpoint_from_relative_humidity(T, RH).to("degC").magnitude)}
    p = series(req, "pressure", required=False)
    if p is not None:
        P = units.Quantity(array(p), unit_of(p, "hPa"))
        if len(P) != len(T):
            raise incompatible("pressure and temperature differ in length")
        td = mpcalc.dewpoint_from_relative_humidity(T, RH)
        out["mixing_ratio_g_kg"] = stats(mpcalc.mixing_ratio_from_relative_humidity(P, T, RH).to("g/kg").magnitude)
        out["potential_temperature_K"] = stats(mpcalc.potential_temperature(P, T).to("K").magnitude)
        out["equivalent_potential_temperature_K"] = stats(
            mpcalc.equivalent_potential_temperature(P, T, td).to("K").magnitude
        )
    return out


def metpy_kinematics(req):
    import numpy as np
    import metpy.calc as mpcalc
    from metpy.units import units

    sp = series(req, "speed")
    di = series(req, "direction")
    S = units.Quantity(array(sp), unit_of(sp, "km/h"))
    D = units.Quantity(array(di), unit_of(di, "degree"))
    if len(S) != len(D):
        raise incompatible("speed and direction differ in length")
    u, v = mpcalc.wind_components(S, D)
    u = u.to("m/s").magnitude
    v = v.to("m/s").magnitude
    um, vm = np.nanmean(u), np.nanmean(v)
    mean_dir = mpcalc.wind_direction(units.Quantity(um, "m/s"), units.Quantity(vm, "m/s"))
    return {
        "u_m_s": stats(u),
        "v_m_s": stats(v),
        "vector_mean_speed_m_s": float(np.hypot(um, vm)),
        "vector_mean_direction_deg": float(mean_dir.to("degree").magnitude),
    }


# ---------------------------------------------------------------- xclim
def per_period(da):
    return [finite(x) for x in da.values.tolist()]


def xclim_heat_extremes(req):
    import xclim.indices as xi

    s = series(req, "tasmax")
    tx = data_array(s, unit_of(s, "degC"), "xclim heat extremes")
    thresh = f"{float(param(req, 'threshold_degC', 30.0))} degC"
    freq = param(req, "freq", "YS")
    return {
        "tx_max_degC": per_period(xi.tx_max(tx, freq=freq)),
        "tx_days_above": per_period(xi.tx_days_above(tx, thresh=thresh, freq=freq)),
        "freq": freq,
    }


def pr_daily(req):
    s = series(req, "pr")
    u = unit_of(s, "mm/d")
    if u == "mm":
        u = "mm/d"
    return data_array(s, u, "xclim precipitation indices")


def xclim_rain_extremes(req):
    import xclim.indices as xi

    pr = pr_daily(req)
    freq = param(req, "freq", "YS")
    window = int(param(req, "window_days", 5))
    if window < 1:
        raise bad_argument("window_days must be at least 1")
    thresh = f"{float(param(req, 'wet_threshold_mm', 1.0))} mm/d"
    return {
        "rx1day_mm": per_period(xi.max_1day_precipitation_amount(pr, freq=freq)),
        "rxnday_mm": per_period(xi.max_n_day_precipitation_amount(pr, window=window, freq=freq)),
        "wet_days": per_period(xi.wetdays(pr, thresh=thresh, freq=freq)),
        "freq": freq,
    }


def xclim_spells(req):
    import xclim.indices as xi

    pr = pr_daily(req)
    freq = param(req, "freq", "YS")
    thresh = f"{float(param(req, 'wet_threshold_mm', 1.0))} mm/d"
    return {
        "max_consecutive_dry_days": per_period(xi.maximum_consecutive_dry_days(pr, thresh=thresh, freq=freq)),
        "max_consecutive_wet_days": per_period(xi.maximum_consecutive_wet_days(pr, thresh=thresh, freq=freq)),
        "freq": freq,
    }


# ---------------------------------------------------------------- thermofeel
def kelvin(s, default="degC"):
    from pint import UnitRegistry

    ureg = UnitRegistry()
    return ureg.Quantity(array(s), unit_of(s, default)).to("K").magnitude


def metres_per_second(s):
    from pint import UnitRegistry

    ureg = UnitRegistry()
    return ureg.Quantity(array(s), unit_of(s, "km/h")).to("m/s").magnitude


def same_length(*arrays):
    n = {len(a) for a in arrays}
    if len(n) != 1:
        raise incompatible("the input series differ in length")


def thermofeel_utci(req):
    import thermofeel as tf

    t = kelvin(series(req, "temperature"))
    va = metres_per_second(series(req, "wind"))
    td = kelvin(series(req, "dewpoint"))
    mrt_s = series(req, "mean_radiant_temperature", required=False)
    mrt = kelvin(mrt_s) if mrt_s is not None else t
    same_length(t, va, td, mrt)
    utci = tf.calculate_utci(t2_k=t, va=va, mrt=mrt, td_k=td)
    import numpy as np

    return {"utci_degC": stats(np.asarray(utci) - 273.15), "mrt_assumed_equal_to_air_temperature": mrt_s is None}


def thermofeel_heat_index(req):
    import numpy as np
    import thermofeel as tf

    t = kelvin(series(req, "temperature"))
    rh = array(series(req, "relative_humidity"))
    same_length(t, rh)
    return {"heat_index_degC": stats(np.asarray(tf.calculate_heat_index_simplified(t, rh)) - 273.15)}


def thermofeel_wind_chill(req):
    import numpy as np
    import thermofeel as tf

    t = kelvin(series(req, "temperature"))
    s = series(req, "wind")
    from pint import UnitRegistry

    va = UnitRegistry().Quantity(array(s), unit_of(s, "km/h")).to("km/h").magnitude
    same_length(t, va)
    return {"wind_chill_degC": stats(np.asarray(tf.calculate_wind_chill(t, va)) - 273.15)}


# ---------------------------------------------------------------- PyET
def lat_rad(req):
    import numpy as np

    lat = param(req, "latitude")
    if lat is None or not -90 <= float(lat) <= 90:
        raise bad_argument("latitude (degrees, -90..90) is required")
    return float(np.deg2rad(float(lat)))


def daily_pd(req, name):
    s = series(req, name)
    require_daily(s, f"PyET ({name})")
    return pd_series(s)


def et_summary(et):
    import numpy as np

    a = np.asarray(et, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        raise incompatible("the method returned no finite value for these inputs")
    return {"total_mm": float(a.sum()), "mean_mm_day": float(a.mean()), "max_mm_day": float(a.max()), "days": int(a.size)}


def pyet_hargreaves(req):
    import pyet

    tmax, tmin = daily_pd(req, "tmax"), daily_pd(req, "tmin")
    if len(tmax) != len(tmin):
        raise incompatible("tmax and tmin differ in length")
    tmean = (tmax + tmin) / 2
    return {"et0": et_summary(pyet.hargreaves(tmean, tmax, tmin, lat=lat_rad(req)))}


def pyet_penman_monteith(req):
    import pyet

    tmax, tmin = daily_pd(req, "tmax"), daily_pd(req, "tmin")
    wind = daily_pd(req, "wind")
    s = series(req, "wind")
    wind = wind * {"km/h": 1 / 3.6, "m/s": 1.0}.get(unit_of(s, "km/h"), float("nan"))
    if not (len(tmax) == len(tmin) == len(wind)):
        raise incompatible("tmax, tmin and wind differ in length")
    tmean = (tmax + tmin) / 2
    elevation = param(req, "elevation_m")
    if elevation is None:
        raise bad_argument("elevation_m is required")
    lat = lat_rad(req)
    rs_input = req["inputs"].get("rs")
    if rs_input is not None:
        rs = daily_pd(req, "rs")
    else:
        # FAO-56 eq. 50 (Hargreaves' radiation formula, interior sites,
        # kRs = 0.16) on pyet's extraterrestrial radiation: the packages hold
        # no measured radiation.
        rs = 0.16 * (tmax - tmin).clip(lower=0) ** 0.5 * pyet.extraterrestrial_r(tmax.index, lat)
    et = pyet.pm_fao56(tmean, wind, rs=rs, tmax=tmax, tmin=tmin, elevation=float(elevation), lat=lat)
    return {"et0": et_summary(et), "rs_estimated_fao56_eq50": rs_input is None}


# ---------------------------------------------------------------- climate-indices
def monthly(req, name, how):
    """Monthly values over whole calendar years (January of the first year
    to December of the last, NaN where the record has no day):
    climate_indices reads a monthly array as starting in January of
    `data_start_year`, so a record starting in another month must be
    padded, not shifted."""
    import pandas as pd

    s = series(req, name)
    require_daily(s, f"climate-indices ({name})")
    p = pd_series(s)
    m = p.resample("MS").sum(min_count=1) if how == "sum" else p.resample("MS").mean()
    full = pd.date_range(f"{m.index[0].year}-01-01", f"{m.index[-1].year}-12-01", freq="MS")
    return m.reindex(full)


def ci_common(req, m):
    scale = int(param(req, "scale_months", 1))
    if scale < 1:
        raise bad_argument("scale_months must be at least 1")
    y0 = int(m.index[0].year)
    y1 = int(m.index[-1].year)
    return scale, y0, y1


def ci_spi(req):
    from climate_indices import compute, indices

    m = monthly(req, "precipitation", "sum")
    scale, y0, y1 = ci_common(req, m)
    spi = indices.spi(m.to_numpy(dtype=float), scale, indices.Distribution.gamma, y0, y0, y1, compute.Periodicity.monthly)
    values = [finite(x) for x in spi[: len(m)]]
    if all(v is None for v in values):
        raise incompatible(f"SPI undefined: {len(m)} month(s) cannot calibrate a gamma fit per calendar month")
    return {"spi": values, "months": [str(t.date()) for t in m.index]}


def ci_pet(req):
    from climate_indices import indices

    m = monthly(req, "temperature", "mean")
    lat = param(req, "latitude")
    if lat is None:
        raise bad_argument("latitude (degrees) is required")
    pet = indices.pet(m.to_numpy(dtype=float), float(lat), int(m.index[0].year))
    values = [finite(x) for x in pet[: len(m)]]
    if all(v is None for v in values):
        raise incompatible("Thornthwaite PET undefined for these monthly temperatures")
    return {"pet_mm_month": values, "months": [str(t.date()) for t in m.index]}


def ci_spei(req):
    from climate_indices import compute, indices

    p = monthly(req, "precipitation", "sum")
    t = monthly(req, "temperature", "mean")
    lat = param(req, "latitude")
    if lat is None:
        raise bad_argument("latitude (degrees) is required")
    p, t = p.align(t, join="inner")
    if len(p) == 0:
        raise incompatible("precipitation and temperature share no month")
    scale, y0, y1 = ci_common(req, p)
    pet = indices.pet(t.to_numpy(dtype=float), float(lat), y0)[: len(t)]
    dist = param(req, "distribution", "gamma")
    if dist not in ("gamma", "pearson"):
        raise bad_argument("distribution must be gamma or pearson")
    spei = indices.spei(p.to_numpy(dtype=float), pet, scale, indices.Distribution[dist], compute.Periodicity.monthly, y0, y0, y1)
    values = [finite(x) for x in spei[: len(p)]]
    if all(v is None for v in values):
        raise incompatible(f"SPEI undefined: {len(p)} month(s) cannot calibrate a {dist} fit per calendar month")
    return {"spei": values, "months": [str(x.date()) for x in p.index]}


# ---------------------------------------------------------------- xskillscore
def paired(req):
    import xarray as xr

    f, o = series(req, "forecast"), series(req, "observation")
    if f.get("times") and o.get("times"):
        fs, os_ = pd_series(f), pd_series(o)
        fs, os_ = fs.align(os_, join="inner")
        if len(fs) < 2:
            raise incompatible("forecast and observation share fewer than 2 time steps")
        idx = fs.index
        fa, oa = fs.to_numpy(), os_.to_numpy()
    else:
        if len(f["values"]) != len(o["values"]):
            raise incompatible("forecast and observation differ in length and have no time axis to align")
        fa, oa = array(f), array(o)
        idx = list(range(len(fa)))
    fx = xr.DataArray(fa, dims="time", coords={"time": idx})
    ox = xr.DataArray(oa, dims="time", coords={"time": idx})
    return fx, ox


def xs_rmse(req):
    import xskillscore as xs

    f, o = paired(req)
    return {"rmse": finite(xs.rmse(o, f, dim="time", skipna=True)), "n": int(f.size)}


def xs_pearson_r(req):
    import xskillscore as xs

    f, o = paired(req)
    return {"pearson_r": finite(xs.pearson_r(o, f, dim="time", skipna=True)), "n": int(f.size)}


def xs_brier(req):
    import xskillscore as xs

    f, o = paired(req)
    thr = param(req, "threshold")
    if thr is None:
        raise bad_argument("threshold (the event: value > threshold) is required")
    thr = float(thr)
    score = xs.brier_score(o > thr, (f > thr).astype(float), dim="time")
    return {"brier_score": finite(score), "threshold": thr, "n": int(f.size)}


def xs_crps(req):
    import xskillscore as xs

    f, o = paired(req)
    members = f.expand_dims(member=[0])
    return {"crps": finite(xs.crps_ensemble(o, members, dim="time")), "members": 1, "n": int(f.size)}


# ---------------------------------------------------------------- pyextremes
def extremes_series(req):
    s = series(req, "series")
    p = pd_series(s).dropna()
    if len(p) < 3:
        raise incompatible(f"{s.get('field')} has {len(p)} finite values; extremes need a longer record")
    if not p.index.is_monotonic_increasing:
        p = p.sort_index()
    return p


def pyx_block_maxima(req):
    from pyextremes import get_extremes

    p = extremes_series(req)
    block = param(req, "block_size", "1D")
    ext = get_extremes(p, method="BM", block_size=block, errors="ignore")
    return {"block_size": block, "count": int(len(ext)), "maxima": stats(ext.to_numpy()), "largest": float(ext.max())}


def pyx_pot(req):
    from pyextremes import get_extremes

    p = extremes_series(req)
    thr = param(req, "threshold")
    if thr is None:
        raise bad_argument("threshold is required")
    r = param(req, "r", "24h")
    ext = get_extremes(p, method="POT", threshold=float(thr), r=r)
    if len(ext) == 0:
        raise incompatible(f"no value exceeds the threshold {thr}")
    return {"threshold": float(thr), "r": r, "count": int(len(ext)), "exceedances": stats(ext.to_numpy())}


def pyx_return_levels(req):
    from pyextremes import EVA

    p = extremes_series(req)
    block = param(req, "block_size", "1D")
    periods = param(req, "return_periods", [10])
    if not isinstance(periods, list) or not periods:
        raise bad_argument("return_periods must be a non-empty list of numbers")
    model = EVA(p)
    model.get_extremes(method="BM", block_size=block, errors="ignore")
    if len(model.extremes) < 10:
        raise incompatible(f"{len(model.extremes)} block maxima of {block}; a GEV fit needs at least 10 blocks")
    model.fit_model(model="MLE", distribution="genextreme")
    levels = []
    for rp in periods:
        value, lower, upper = model.get_return_value(return_period=float(rp), return_period_size=block, alpha=None)
        levels.append({"return_period_blocks": float(rp), "return_level": finite(value)})
    return {"block_size": block, "blocks": int(len(model.extremes)), "distribution": "genextreme", "levels": levels}


OPERATIONS = {
    "metpy_rain_summary": ("metpy", metpy_rain_summary),
    "metpy_profile": ("metpy", metpy_profile),
    "metpy_kinematics": ("metpy", metpy_kinematics),
    "xclim_heat_extremes": ("xclim", xclim_heat_extremes),
    "xclim_rain_extremes": ("xclim", xclim_rain_extremes),
    "xclim_spells": ("xclim", xclim_spells),
    "thermofeel_utci": ("thermofeel", thermofeel_utci),
    "thermofeel_heat_index": ("thermofeel", thermofeel_heat_index),
    "thermofeel_wind_chill": ("thermofeel", thermofeel_wind_chill),
    "pyet_penman_monteith": ("pyet", pyet_penman_monteith),
    "pyet_hargreaves": ("pyet", pyet_hargreaves),
    "climate_indices_spi": ("climate-indices", ci_spi),
    "climate_indices_spei": ("climate-indices", ci_spei),
    "climate_indices_pet": ("climate-indices", ci_pet),
    "xskillscore_rmse": ("xskillscore", xs_rmse),
    "xskillscore_pearson_r": ("xskillscore", xs_pearson_r),
    "xskillscore_brier": ("xskillscore", xs_brier),
    "xskillscore_crps": ("xskillscore", xs_crps),
    "pyextremes_block_maxima": ("pyextremes", pyx_block_maxima),
    "pyextremes_pot": ("pyextremes", pyx_pot),
    "pyextremes_return_levels": ("pyextremes", pyx_return_levels),
}


def quiet_structlog():
    """climate-indices logs through structlog to stdout: send it to stderr."""
    try:
        import structlog

        structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    except ImportError:
        pass


def main():
    quiet_structlog()
    try:
        with open(sys.argv[1], encoding="utf-8") as fh:
            req = json.load(fh)
        entry = OPERATIONS.get(req.get("operation"))
        if entry is None:
            raise Failure("adapter", f"unknown operation {req.get('operation')!r}")
        dist, fn = entry
        try:
            import importlib.metadata as md

            version = md.version(dist)
        except Exception as e:  # noqa: BLE001
            raise Failure("adapter", f"{dist} is not installed in this interpreter: {e}")
        try:
            result = fn(req)
        except Failure:
            raise
        except ImportError as e:
            raise Failure("adapter", f"cannot import {dist}: {e}")
        except Exception as e:  # noqa: BLE001
            raise Failure("runtime", f"{type(e).__name__}: {e}")
        print(json.dumps({"status": "ok", "library": dist, "version": version, "result": result}, allow_nan=False))
    except Failure as f:
        print(json.dumps({"status": "error", "failure_class": f.failure_class, "message": str(f)}))


if __name__ == "__main__":
    main()
