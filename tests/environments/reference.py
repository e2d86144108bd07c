"""Expected values of the environment tests (issue 46): each operation's
quantity computed by calling the library directly in the same interpreter,
from the package file read here (not through the adapter), plus numpy
references of the Fortran adapter's formulas.

Usage: python reference.py CASES.json  -> prints {case_id: result} as JSON.
A case: {"id", "op", "inputs": {name: [file, dotted_field, dotted_time_field]}, "params"}.
"""
import json
import sys
import warnings

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")


def pick(doc, dotted):
    for part in dotted.split("."):
        doc = doc[part]
    return doc


def load(spec):
    path, field, tfield = spec
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    values = np.array([np.nan if v is None else v for v in pick(doc, field)], dtype=float)
    times = pd.to_datetime(pick(doc, tfield)) if tfield else None
    return values, times


def st(a):
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    return {"mean": float(a.mean()), "min": float(a.min()), "max": float(a.max())}


def case(c):
    op, p = c["op"], c.get("params", {})
    I = {k: load(v) for k, v in c["inputs"].items()}
    if op == "metpy_rain_summary":
        from metpy.units import units
        q = units.Quantity(I["precipitation"][0], "mm")
        return {"total_mm": float(np.nansum(q.m)), "max_mm": float(np.nanmax(q.m)),
                "wet_steps": int((q.m[np.isfinite(q.m)] >= p.get("threshold_mm", 0.1)).sum())}
    if op == "metpy_profile":
        import metpy.calc as mc
        from metpy.units import units
        T = units.Quantity(I["temperature"][0], "degC")
        RH = units.Quantity(I["relative_humidity"][0], "percent")
        out = {"dewpoint_degC": st(mc.dewpoint_from_relative_humidity(T, RH).to("degC").m)}
        if "pressure" in I:
            P = units.Quantity(I["pressure"][0], "hPa")
            out["potential_temperature_K"] = st(mc.potential_temperature(P, T).to("K").m)
            td = mc.dewpoint_from_relative_humidity(T, RH)
            out["equivalent_potential_temperature_K"] = st(mc.equivalent_potential_temperature(P, T, td).to("K").m)
        return out
    if op == "metpy_kinematics":
        import metpy.calc as mc
        from metpy.units import units
        u, v = mc.wind_components(units.Quantity(I["speed"][0], "km/h"), units.Quantity(I["direction"][0], "degree"))
        return {"u_mean": float(np.nanmean(u.to("m/s").m)), "v_mean": float(np.nanmean(v.to("m/s").m))}
    if op.startswith("xclim_"):
        import xarray as xr
        import xclim.indices as xi
        name = "tasmax" if op == "xclim_heat_extremes" else "pr"
        vals, t = I[name]
        da = xr.DataArray(vals, dims="time", coords={"time": t}, attrs={"units": "degC" if name == "tasmax" else "mm/d"})
        if op == "xclim_heat_extremes":
            return {"tx_max": xi.tx_max(da).values.tolist(), "tx_days_above": xi.tx_days_above(da, thresh=f"{p.get('threshold_degC', 30.0)} degC").values.tolist()}
        if op == "xclim_rain_extremes":
            return {"rx1day": xi.max_1day_precipitation_amount(da).values.tolist(),
                    "rxnday": xi.max_n_day_precipitation_amount(da, window=p.get("window_days", 5)).values.tolist(),
                    "wet_days": xi.wetdays(da, thresh="1.0 mm/d").values.tolist()}
        return {"cdd": xi.maximum_consecutive_dry_days(da, thresh="1.0 mm/d").values.tolist(),
                "cwd": xi.maximum_consecutive_wet_days(da, thresh="1.0 mm/d").values.tolist()}
    if op.startswith("thermofeel_"):
        import thermofeel as tf
        T = I["temperature"][0] + 273.15
        if op == "thermofeel_heat_index":
            return {"mean": float(np.mean(tf.calculate_heat_index_simplified(T, I["relative_humidity"][0]) - 273.15))}
        if op == "thermofeel_wind_chill":
            return {"mean": float(np.mean(tf.calculate_wind_chill(T, I["wind"][0]) - 273.15))}
        utci = tf.calculate_utci(t2_k=T, va=I["wind"][0] / 3.6, mrt=T, td_k=I["dewpoint"][0] + 273.15)
        return {"mean": float(np.nanmean(utci) - 273.15)}
    if op.startswith("pyet_"):
        import pyet
        tx = pd.Series(I["tmax"][0], index=I["tmax"][1])
        tn = pd.Series(I["tmin"][0], index=I["tmin"][1])
        lat = np.deg2rad(p["latitude"])
        if op == "pyet_hargreaves":
            et = pyet.hargreaves((tx + tn) / 2, tx, tn, lat=lat)
        else:
            w = pd.Series(I["wind"][0], index=I["wind"][1]) / 3.6
            rs = 0.16 * (tx - tn).clip(lower=0) ** 0.5 * pyet.extraterrestrial_r(tx.index, lat)
            et = pyet.pm_fao56((tx + tn) / 2, w, rs=rs, tmax=tx, tmin=tn, elevation=p["elevation_m"], lat=lat)
        return {"total_mm": float(np.nansum(et))}
    if op.startswith("climate_indices_"):
        from climate_indices import compute, indices

        def listed(a, n):
            return [None if not np.isfinite(x) else float(x) for x in a[:n]]

        scale = p.get("scale_months", 1)

        def years(m):
            # climate_indices reads a monthly array as starting in January.
            full = pd.date_range(f"{m.index[0].year}-01-01", f"{m.index[-1].year}-12-01", freq="MS")
            return m.reindex(full)

        if op == "climate_indices_pet":
            s = years(pd.Series(I["temperature"][0], index=I["temperature"][1]).resample("MS").mean())
            return {"values": listed(indices.pet(s.to_numpy(), p["latitude"], s.index[0].year), len(s))}
        s = years(pd.Series(I["precipitation"][0], index=I["precipitation"][1]).resample("MS").sum(min_count=1))
        y0, y1 = s.index[0].year, s.index[-1].year
        if op == "climate_indices_spi":
            spi = indices.spi(s.to_numpy(), scale, indices.Distribution.gamma, y0, y0, y1, compute.Periodicity.monthly)
            return {"values": listed(spi, len(s))}
        t = years(pd.Series(I["temperature"][0], index=I["temperature"][1]).resample("MS").mean())
        pet = indices.pet(t.to_numpy(), p["latitude"], y0)[: len(t)]
        spei = indices.spei(s.to_numpy(), pet, scale, indices.Distribution.gamma, compute.Periodicity.monthly, y0, y0, y1)
        return {"values": listed(spei, len(s))}
    if op.startswith("xskillscore_"):
        import xarray as xr
        import xskillscore as xs
        f, o = I["forecast"], I["observation"]
        fx = xr.DataArray(f[0], dims="time", coords={"time": f[1]})
        ox = xr.DataArray(o[0], dims="time", coords={"time": o[1]})
        fx, ox = xr.align(fx, ox)
        if op == "xskillscore_rmse":
            return {"v": float(xs.rmse(ox, fx, dim="time", skipna=True))}
        if op == "xskillscore_pearson_r":
            return {"v": float(xs.pearson_r(ox, fx, dim="time", skipna=True))}
        if op == "xskillscore_brier":
            t = p["threshold"]
            return {"v": float(xs.brier_score(ox > t, (fx > t).astype(float), dim="time"))}
        return {"v": float(xs.crps_ensemble(ox, fx.expand_dims(member=[0]), dim="time"))}
    if op.startswith("pyextremes_"):
        from pyextremes import EVA, get_extremes
        s = pd.Series(I["series"][0], index=I["series"][1]).dropna()
        if op == "pyextremes_block_maxima":
            e = get_extremes(s, method="BM", block_size=p.get("block_size", "1D"), errors="ignore")
            return {"count": int(len(e)), "mean": float(e.mean())}
        if op == "pyextremes_pot":
            e = get_extremes(s, method="POT", threshold=p["threshold"], r="24h")
            return {"count": int(len(e)), "max": float(e.max())}
        m = EVA(s)
        m.get_extremes(method="BM", block_size=p.get("block_size", "1D"), errors="ignore")
        m.fit_model(model="MLE", distribution="genextreme")
        return {"level": float(m.get_return_value(return_period=10.0, return_period_size=p.get("block_size", "1D"), alpha=None)[0])}
    if op == "r_climate_spei":
        # numpy of the same formulas (FAO-56 eqs. 21 and 52; unbiased PWMs
        # and the log-logistic of Vicente-Serrano et al. 2010).
        from scipy.special import gamma as G
        from scipy.stats import norm
        P, t = I["precipitation"]
        tx, tn = I["tmax"][0], I["tmin"][0]
        lat = np.deg2rad(p["latitude"])
        J = t.dayofyear.to_numpy()
        dr = 1 + 0.033 * np.cos(2 * np.pi * J / 365)
        dec = 0.409 * np.sin(2 * np.pi * J / 365 - 1.39)
        ws = np.arccos(np.clip(-np.tan(lat) * np.tan(dec), -1, 1))
        ra = 24 * 60 / np.pi * 0.0820 * dr * (ws * np.sin(lat) * np.sin(dec) + np.cos(lat) * np.cos(dec) * np.sin(ws))
        pet = 0.0023 * 0.408 * ra * ((tx + tn) / 2 + 17.8) * np.sqrt(np.maximum(tx - tn, 0))
        d = P - pet
        k = p.get("scale_days", 1)
        if k > 1:
            d = np.array([np.nan] * (k - 1) + [d[i - k + 1:i + 1].sum() for i in range(k - 1, len(d))])
        v = np.sort(d[np.isfinite(d)])
        n = len(v)
        i = np.arange(1, n + 1)
        w0 = v.mean()
        w1 = np.sum(v * (n - i) / (n - 1)) / n
        w2 = np.sum(v * (n - i) * (n - i - 1) / ((n - 1) * (n - 2))) / n
        beta = (2 * w1 - w0) / (6 * w1 - w0 - 6 * w2)
        g = G(1 + 1 / beta) * G(1 - 1 / beta)
        alpha = (w0 - 2 * w1) * beta / g
        gam = w0 - alpha * g
        spei = norm.ppf(1 / (1 + (alpha / (d - gam)) ** beta))
        return {"beta": float(beta), "pet_total": float(np.nansum(pet)), "spei_last": float(spei[-1]), "spei_min": float(np.nanmin(spei))}
    if op == "fortran_rain":
        x = I["precipitation"][0]
        w = int(p.get("window", 24))
        xs_ = np.nan_to_num(x)
        win = max(xs_[i:i + w].sum() for i in range(len(x) - w + 1)) if len(x) >= w else float(np.nansum(x))
        return {"total": float(np.nansum(x)), "max": float(np.nanmax(x)), "wet": int((x[np.isfinite(x)] >= p.get("threshold_mm", 0.1)).sum()), "window": float(win)}
    if op == "fortran_kinematics":
        s, d = I["speed"][0] / 3.6, np.deg2rad(I["direction"][0])
        return {"u": float(np.mean(-s * np.sin(d))), "v": float(np.mean(-s * np.cos(d)))}
    if op == "fortran_moisture_transport":
        td, pr, sp = I["dewpoint"][0], I["pressure"][0], I["speed"][0]
        e = 6.112 * np.exp(17.67 * td / (td + 243.5))
        q = 0.622 * e / (pr - 0.378 * e)
        flux = 1000 * q * sp / 3.6
        return {"mean": float(flux.mean()), "max": float(flux.max())}
    if op in ("cdo_temporal_aggregate", "nco_derive_field", "nco_weighted_mean", "r_climate_summary", "ncl_summary", "cdo_field_aggregate", "r_climate_trend", "r_climate_gev", "nco_inspect"):
        return {"values": [None if not np.isfinite(v) else float(v) for v in next(iter(I.values()))[0]]}
    raise SystemExit(f"no reference for {op}")


def main():
    with open(sys.argv[1], encoding="utf-8") as fh:
        cases = json.load(fh)
    print(json.dumps({c["id"]: case(c) for c in cases}))


if __name__ == "__main__":
    main()
