//! The 13 environments of Table 7 / Table 14 and the audited operations of
//! each (Table 14's "Operations" column), as data: names, inputs (series
//! read from package files), parameters, and what detects the environment.

use serde_json::{json, Map, Value};

/// How an environment is provided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvKind {
    /// A Python library importable in the scientific environment
    /// (`scripts/python-env.sh`) at the version pinned in
    /// `crates/sandbox/python-requirements.txt`.
    PythonLibrary {
        /// The distribution name in the requirements file (`metpy`).
        distribution: &'static str,
    },
    /// A command-line runtime found on `PATH` (Debian packages installed by
    /// `scripts/bootstrap.sh`, except Julia).
    Runtime {
        /// Executables that must all be on `PATH`.
        binaries: &'static [&'static str],
        /// Files that must exist (a runtime's own libraries).
        files: &'static [&'static str],
    },
}

/// One input series of an operation: a package file and a field in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputSpec {
    /// Argument name.
    pub name: &'static str,
    /// Whether the operation needs it.
    pub required: bool,
    /// Units assumed when the reference gives none (Open-Meteo's).
    pub default_units: &'static str,
    /// What it is.
    pub description: &'static str,
}

/// One scalar parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// Argument name.
    pub name: &'static str,
    /// JSON Schema type: `number`, `integer`, `string` or `array`.
    pub kind: &'static str,
    /// Whether it must be given.
    pub required: bool,
    /// What it is (with its default when optional).
    pub description: &'static str,
}

/// One audited operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationSpec {
    /// The tool name (`xclim_heat_extremes`).
    pub name: &'static str,
    /// What it computes and with which library call.
    pub description: &'static str,
    /// Input series.
    pub inputs: &'static [InputSpec],
    /// Parameters.
    pub params: &'static [ParamSpec],
    /// Fewest values of the first input the method accepts (checked before
    /// running: a justified refusal, App. A.4).
    pub min_values: usize,
}

/// One environment of Table 7.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Environment {
    /// The paper's name (`MetPy`, `R climate`).
    pub name: &'static str,
    /// The command-line spelling (`--require-environment metpy`).
    pub slug: &'static str,
    /// Table 7's panel: `python` or `runtime`.
    pub kind: EnvKind,
    /// Table 14's "Operations" column as the paper writes it.
    pub paper_operations: &'static str,
    /// The audited operations.
    pub operations: &'static [OperationSpec],
    /// How to install it, shown when it is missing.
    pub install_hint: &'static str,
    /// Whether this project's CI installs and tests it (Julia: no).
    pub tested_here: bool,
}

const fn input(name: &'static str, units: &'static str, description: &'static str) -> InputSpec {
    InputSpec {
        name,
        required: true,
        default_units: units,
        description,
    }
}

const fn optional(name: &'static str, units: &'static str, description: &'static str) -> InputSpec {
    InputSpec {
        name,
        required: false,
        default_units: units,
        description,
    }
}

const fn param(
    name: &'static str,
    kind: &'static str,
    required: bool,
    description: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        kind,
        required,
        description,
    }
}

const PY_HINT: &str = "run scripts/python-env.sh (installs the pins of crates/sandbox/python-requirements.txt) and point --python / EARTHVERSE_PYTHON at its interpreter";

const LATITUDE: ParamSpec = param(
    "latitude",
    "number",
    true,
    "latitude of the point in degrees (Open-Meteo files give it)",
);

/// Days climate-indices' SPI and SPEI need: its gamma (or Pearson) fit is
/// per calendar month over the record's years, so some calendar month
/// must occur in two years: 13 months, 365 + 31 days. With fewer, every
/// value is NaN (checked on climate_indices 3.1.0).
pub const CI_SPI_MIN_DAYS: usize = 396;

/// Days climate-indices' Thornthwaite PET needs: the annual heat index is
/// a sum over the 12 monthly mean temperatures, so all 12 calendar months
/// must be present (any 365 consecutive days hold them); with fewer every
/// value is NaN (checked on climate_indices 3.1.0).
pub const CI_PET_MIN_DAYS: usize = 365;

/// The environments in Table 7's order.
pub const ENVIRONMENTS: &[Environment] = &[
    Environment {
        name: "MetPy",
        slug: "metpy",
        kind: EnvKind::PythonLibrary { distribution: "metpy" },
        paper_operations: "rain summary; profiles; kinematics",
        operations: &[
            OperationSpec {
                name: "metpy_rain_summary",
                description: "Precipitation summary with MetPy units (pint): total, maximum, wet steps at or above threshold_mm (default 0.1).",
                inputs: &[input("precipitation", "mm", "precipitation amounts per step")],
                params: &[param("threshold_mm", "number", false, "wet-step threshold in mm (default 0.1)")],
                min_values: 1,
            },
            OperationSpec {
                name: "metpy_profile",
                description: "Thermodynamic profile of a surface series with metpy.calc: dewpoint_from_relative_humidity; with pressure also mixing_ratio_from_relative_humidity, potential_temperature, equivalent_potential_temperature (mean, min, max of each).",
                inputs: &[
                    input("temperature", "degC", "air temperature"),
                    input("relative_humidity", "percent", "relative humidity"),
                    optional("pressure", "hPa", "air pressure (e.g. pressure_msl)"),
                ],
                params: &[],
                min_values: 1,
            },
            OperationSpec {
                name: "metpy_kinematics",
                description: "Wind components with metpy.calc.wind_components from speed and direction; vector-mean speed and direction (wind_direction).",
                inputs: &[
                    input("speed", "km/h", "wind speed"),
                    input("direction", "degree", "wind direction (meteorological, from)"),
                ],
                params: &[],
                min_values: 1,
            },
        ],
        install_hint: PY_HINT,
        tested_here: true,
    },
    Environment {
        name: "xclim",
        slug: "xclim",
        kind: EnvKind::PythonLibrary { distribution: "xclim" },
        paper_operations: "heat/rain extremes; wet/dry spells",
        operations: &[
            OperationSpec {
                name: "xclim_heat_extremes",
                description: "xclim.indices.tx_max and tx_days_above (threshold_degC, default 30) on a daily maximum-temperature series, per freq period (default YS).",
                inputs: &[input("tasmax", "degC", "daily maximum temperature")],
                params: &[
                    param("threshold_degC", "number", false, "hot-day threshold (default 30)"),
                    param("freq", "string", false, "resampling frequency (default YS)"),
                ],
                min_values: 2,
            },
            OperationSpec {
                name: "xclim_rain_extremes",
                description: "xclim.indices.max_1day_precipitation_amount, max_n_day_precipitation_amount (window_days, default 5) and wetdays (wet_threshold_mm, default 1) on daily precipitation.",
                inputs: &[input("pr", "mm/d", "daily precipitation")],
                params: &[
                    param("window_days", "integer", false, "Rx n-day window (default 5)"),
                    param("wet_threshold_mm", "number", false, "wet-day threshold (default 1)"),
                    param("freq", "string", false, "resampling frequency (default YS)"),
                ],
                min_values: 2,
            },
            OperationSpec {
                name: "xclim_spells",
                description: "xclim.indices.maximum_consecutive_dry_days and maximum_consecutive_wet_days (wet_threshold_mm, default 1) on daily precipitation.",
                inputs: &[input("pr", "mm/d", "daily precipitation")],
                params: &[
                    param("wet_threshold_mm", "number", false, "wet-day threshold (default 1)"),
                    param("freq", "string", false, "resampling frequency (default YS)"),
                ],
                min_values: 2,
            },
        ],
        install_hint: PY_HINT,
        tested_here: true,
    },
    Environment {
        name: "thermofeel",
        slug: "thermofeel",
        kind: EnvKind::PythonLibrary { distribution: "thermofeel" },
        paper_operations: "UTCI; heat index; wind chill",
        operations: &[
            OperationSpec {
                name: "thermofeel_utci",
                description: "thermofeel.calculate_utci from temperature, 10 m wind and dewpoint; mean radiant temperature from the optional input, else taken equal to air temperature (no radiation in the packages; the output says so).",
                inputs: &[
                    input("temperature", "degC", "air temperature"),
                    input("wind", "km/h", "wind speed"),
                    input("dewpoint", "degC", "dewpoint temperature"),
                    optional("mean_radiant_temperature", "degC", "mean radiant temperature"),
                ],
                params: &[],
                min_values: 1,
            },
            OperationSpec {
                name: "thermofeel_heat_index",
                description: "thermofeel.calculate_heat_index_simplified from temperature and relative humidity.",
                inputs: &[
                    input("temperature", "degC", "air temperature"),
                    input("relative_humidity", "percent", "relative humidity"),
                ],
                params: &[],
                min_values: 1,
            },
            OperationSpec {
                name: "thermofeel_wind_chill",
                description: "thermofeel.calculate_wind_chill from temperature and wind speed (km/h).",
                inputs: &[
                    input("temperature", "degC", "air temperature"),
                    input("wind", "km/h", "wind speed"),
                ],
                params: &[],
                min_values: 1,
            },
        ],
        install_hint: PY_HINT,
        tested_here: true,
    },
    Environment {
        name: "PyET",
        slug: "pyet",
        kind: EnvKind::PythonLibrary { distribution: "pyet" },
        paper_operations: "Penman–Monteith; Hargreaves",
        operations: &[
            OperationSpec {
                name: "pyet_penman_monteith",
                description: "pyet.pm_fao56 reference evapotranspiration from daily tmax, tmin and 10 m wind; shortwave radiation from the optional rs input, else FAO-56 eq. 50 on pyet.extraterrestrial_r (said in the output).",
                inputs: &[
                    input("tmax", "degC", "daily maximum temperature"),
                    input("tmin", "degC", "daily minimum temperature"),
                    input("wind", "km/h", "daily wind speed"),
                    optional("rs", "MJ/m2/d", "incoming shortwave radiation"),
                ],
                params: &[LATITUDE, param("elevation_m", "number", true, "elevation in metres")],
                min_values: 2,
            },
            OperationSpec {
                name: "pyet_hargreaves",
                description: "pyet.hargreaves reference evapotranspiration from daily tmax and tmin.",
                inputs: &[
                    input("tmax", "degC", "daily maximum temperature"),
                    input("tmin", "degC", "daily minimum temperature"),
                ],
                params: &[LATITUDE],
                min_values: 2,
            },
        ],
        install_hint: PY_HINT,
        tested_here: true,
    },
    Environment {
        name: "climate-indices",
        slug: "climate-indices",
        kind: EnvKind::PythonLibrary { distribution: "climate-indices" },
        paper_operations: "SPI; SPEI; PET",
        operations: &[
            OperationSpec {
                name: "climate_indices_spi",
                description: "climate_indices.indices.spi (gamma, monthly, calibration over the record) on daily precipitation summed by calendar month (Jan-Dec years); scale_months (default 1). The gamma fit of a calendar month needs it in two years: at least 396 days (13 months).",
                inputs: &[input("precipitation", "mm", "daily precipitation")],
                params: &[param("scale_months", "integer", false, "accumulation scale in months (default 1)")],
                min_values: CI_SPI_MIN_DAYS,
            },
            OperationSpec {
                name: "climate_indices_spei",
                description: "climate_indices.indices.spei (distribution gamma, the default, or pearson; monthly, Jan-Dec years) on monthly precipitation minus Thornthwaite PET (indices.pet) of monthly mean temperature; at least 396 days (13 months).",
                inputs: &[
                    input("precipitation", "mm", "daily precipitation"),
                    input("temperature", "degC", "daily temperature"),
                ],
                params: &[
                    LATITUDE,
                    param("scale_months", "integer", false, "accumulation scale in months (default 1)"),
                    param("distribution", "string", false, "gamma (default) or pearson"),
                ],
                min_values: CI_SPI_MIN_DAYS,
            },
            OperationSpec {
                name: "climate_indices_pet",
                description: "climate_indices.indices.pet (Thornthwaite) on daily temperature averaged by calendar month (Jan-Dec years); the annual heat index needs all 12 months: at least 365 days.",
                inputs: &[input("temperature", "degC", "daily temperature")],
                params: &[LATITUDE],
                min_values: CI_PET_MIN_DAYS,
            },
        ],
        install_hint: PY_HINT,
        tested_here: true,
    },
    Environment {
        name: "xskillscore",
        slug: "xskillscore",
        kind: EnvKind::PythonLibrary { distribution: "xskillscore" },
        paper_operations: "RMSE; correlation; Brier; CRPS",
        operations: &[
            OperationSpec {
                name: "xskillscore_rmse",
                description: "xskillscore.rmse of a forecast against an observation series (aligned on shared time labels).",
                inputs: &[input("forecast", "", "forecast or model series"), input("observation", "", "observed series")],
                params: &[],
                min_values: 2,
            },
            OperationSpec {
                name: "xskillscore_pearson_r",
                description: "xskillscore.pearson_r of a forecast against an observation series.",
                inputs: &[input("forecast", "", "forecast or model series"), input("observation", "", "observed series")],
                params: &[],
                min_values: 2,
            },
            OperationSpec {
                name: "xskillscore_brier",
                description: "xskillscore.brier_score of the event value > threshold, the deterministic forecast taken as probability 0 or 1.",
                inputs: &[input("forecast", "", "forecast or model series"), input("observation", "", "observed series")],
                params: &[param("threshold", "number", true, "event threshold (value > threshold)")],
                min_values: 2,
            },
            OperationSpec {
                name: "xskillscore_crps",
                description: "xskillscore.crps_ensemble with the forecast as a one-member ensemble.",
                inputs: &[input("forecast", "", "forecast or model series"), input("observation", "", "observed series")],
                params: &[],
                min_values: 2,
            },
        ],
        install_hint: PY_HINT,
        tested_here: true,
    },
    Environment {
        name: "pyextremes",
        slug: "pyextremes",
        kind: EnvKind::PythonLibrary { distribution: "pyextremes" },
        paper_operations: "block maxima; POT; return levels",
        operations: &[
            OperationSpec {
                name: "pyextremes_block_maxima",
                description: "pyextremes.get_extremes(method='BM', block_size, default 1D) on a time series.",
                inputs: &[input("series", "", "time series with a time axis")],
                params: &[param("block_size", "string", false, "pandas offset of a block (default 1D)")],
                min_values: 3,
            },
            OperationSpec {
                name: "pyextremes_pot",
                description: "pyextremes.get_extremes(method='POT', threshold, r, default 24h) on a time series.",
                inputs: &[input("series", "", "time series with a time axis")],
                params: &[
                    param("threshold", "number", true, "peaks-over-threshold threshold"),
                    param("r", "string", false, "declustering run (default 24h)"),
                ],
                min_values: 3,
            },
            OperationSpec {
                name: "pyextremes_return_levels",
                description: "pyextremes.EVA block maxima (block_size, default 1D), MLE genextreme fit, get_return_value for return_periods counted in blocks (default [10]); at least 10 blocks.",
                inputs: &[input("series", "", "time series with a time axis")],
                params: &[
                    param("block_size", "string", false, "pandas offset of a block (default 1D)"),
                    param("return_periods", "array", false, "return periods in blocks (default [10])"),
                ],
                min_values: 10,
            },
        ],
        install_hint: PY_HINT,
        tested_here: true,
    },
    Environment {
        name: "Julia",
        slug: "julia",
        kind: EnvKind::Runtime { binaries: &["julia"], files: &[] },
        paper_operations: "summary; integration; sensitivity",
        operations: &[
            OperationSpec {
                name: "julia_summary",
                description: "Julia (Statistics stdlib): mean, standard deviation, minimum, maximum, quantiles of a series.",
                inputs: &[input("series", "", "numeric series")],
                params: &[],
                min_values: 1,
            },
            OperationSpec {
                name: "julia_integration",
                description: "Julia: trapezoidal integral of a series over its steps (dt, default 1).",
                inputs: &[input("series", "", "numeric series")],
                params: &[param("dt", "number", false, "step length (default 1)")],
                min_values: 2,
            },
            OperationSpec {
                name: "julia_sensitivity",
                description: "Julia: least-squares slope of y on x (sensitivity dy/dx) and its correlation.",
                inputs: &[input("x", "", "predictor series"), input("y", "", "response series")],
                params: &[],
                min_values: 3,
            },
        ],
        install_hint: "Julia has no Debian package: install it from julialang.org (juliaup) so that `julia` is on PATH; this adapter is untested in this project's CI",
        tested_here: false,
    },
    Environment {
        name: "R climate",
        slug: "r-climate",
        kind: EnvKind::Runtime {
            binaries: &["Rscript"],
            files: &["/usr/lib/R/bin/exec/R", "/usr/lib/R/site-library/evd/DESCRIPTION"],
        },
        paper_operations: "summary; SPEI; GEV; trend",
        operations: &[
            OperationSpec {
                name: "r_climate_summary",
                description: "R: mean, sd, min, max and quantile() of a series.",
                inputs: &[input("series", "", "numeric series")],
                params: &[],
                min_values: 1,
            },
            OperationSpec {
                name: "r_climate_spei",
                description: "R (base; the SPEI package is not in Debian): SPEI of the daily water balance, precipitation minus Hargreaves PET (FAO-56) from tmax/tmin and the day of year, accumulated over scale_days (default 1), standardised with a three-parameter log-logistic fitted by unbiased probability-weighted moments over the record (Vicente-Serrano et al. 2010).",
                inputs: &[
                    input("precipitation", "mm", "daily precipitation"),
                    input("tmax", "degC", "daily maximum temperature"),
                    input("tmin", "degC", "daily minimum temperature"),
                ],
                params: &[LATITUDE, param("scale_days", "integer", false, "accumulation in days (default 1)")],
                min_values: 10,
            },
            OperationSpec {
                name: "r_climate_gev",
                description: "R evd::fgev maximum-likelihood GEV fit of block maxima (block_length steps, default 24) and return levels for return_periods in blocks (default [10]).",
                inputs: &[input("series", "", "numeric series")],
                params: &[
                    param("block_length", "integer", false, "values per block (default 24)"),
                    param("return_periods", "array", false, "return periods in blocks (default [10])"),
                ],
                min_values: 10,
            },
            OperationSpec {
                name: "r_climate_trend",
                description: "R: lm() slope per step with its p-value, and Kendall's tau (cor.test, method kendall) against the step index.",
                inputs: &[input("series", "", "numeric series")],
                params: &[],
                min_values: 3,
            },
        ],
        install_hint: "run scripts/bootstrap.sh (apt: r-base-core r-cran-evd)",
        tested_here: true,
    },
    Environment {
        name: "CDO",
        slug: "cdo",
        kind: EnvKind::Runtime { binaries: &["cdo", "ncgen"], files: &[] },
        paper_operations: "temporal and field aggregates",
        operations: &[
            OperationSpec {
                name: "cdo_temporal_aggregate",
                description: "CDO tim<stat> / day<stat> / mon<stat> (stat: mean, max, min, sum, std; period: all, day, month) of a series written to NetCDF (ncgen) in the sandbox's scratch.",
                inputs: &[input("series", "", "time series with a time axis")],
                params: &[
                    param("stat", "string", true, "mean, max, min, sum or std"),
                    param("period", "string", false, "all (default), day or month"),
                ],
                min_values: 1,
            },
            OperationSpec {
                name: "cdo_field_aggregate",
                description: "CDO fld<stat> (mean, max, min, sum, std) over the points given as a field (one series per point, equal weights), per time step; then the time mean of that field statistic.",
                inputs: &[
                    input("series", "", "first point's series"),
                    input("series2", "", "second point's series (same time axis)"),
                    optional("series3", "", "third point's series"),
                    optional("series4", "", "fourth point's series"),
                ],
                params: &[param("stat", "string", true, "mean, max, min, sum or std")],
                min_values: 1,
            },
        ],
        install_hint: "run scripts/bootstrap.sh (apt: cdo netcdf-bin)",
        tested_here: true,
    },
    Environment {
        name: "NCO",
        slug: "nco",
        kind: EnvKind::Runtime { binaries: &["ncks", "ncwa", "ncap2", "ncgen"], files: &[] },
        paper_operations: "inspect; weighted mean; derive field",
        operations: &[
            OperationSpec {
                name: "nco_inspect",
                description: "NCO ncks -m --json: the metadata (dimensions, variables, units) of the series written as NetCDF.",
                inputs: &[input("series", "", "numeric series")],
                params: &[],
                min_values: 1,
            },
            OperationSpec {
                name: "nco_weighted_mean",
                description: "NCO ncwa -a time -w weight: weighted time mean of a series with a weight series.",
                inputs: &[input("series", "", "numeric series"), input("weight", "", "weights, same length")],
                params: &[],
                min_values: 1,
            },
            OperationSpec {
                name: "nco_derive_field",
                description: "NCO ncap2: derives `out` from an expression over `a` (and optionally `b`), e.g. `a*3.6` or `(a+b)/2`; the field's mean, min and max.",
                inputs: &[input("a", "", "series a"), optional("b", "", "series b, same length")],
                params: &[param("expression", "string", true, "ncap2 expression over a and b (arithmetic and ncap2 functions only)")],
                min_values: 1,
            },
        ],
        install_hint: "run scripts/bootstrap.sh (apt: nco netcdf-bin)",
        tested_here: true,
    },
    Environment {
        name: "NCL",
        slug: "ncl",
        kind: EnvKind::Runtime { binaries: &["ncl"], files: &[] },
        paper_operations: "summary only",
        operations: &[OperationSpec {
            name: "ncl_summary",
            description: "NCL dim_avg, dim_stddev, min, max and num of a series (asciiread of the values).",
            inputs: &[input("series", "", "numeric series")],
            params: &[],
            min_values: 1,
        }],
        install_hint: "run scripts/bootstrap.sh (apt: ncl-ncarg)",
        tested_here: true,
    },
    Environment {
        name: "Fortran",
        slug: "fortran",
        kind: EnvKind::Runtime { binaries: &["gfortran"], files: &[] },
        paper_operations: "rain; kinematics; moisture transport",
        operations: &[
            OperationSpec {
                name: "fortran_rain",
                description: "Fortran: total, maximum, wet steps (>= threshold_mm, default 0.1) and the maximum accumulation over window steps (default 24).",
                inputs: &[input("precipitation", "mm", "precipitation per step")],
                params: &[
                    param("threshold_mm", "number", false, "wet threshold (default 0.1)"),
                    param("window", "integer", false, "accumulation window in steps (default 24)"),
                ],
                min_values: 1,
            },
            OperationSpec {
                name: "fortran_kinematics",
                description: "Fortran: wind components u = -s sin(d), v = -s cos(d) (m/s) from speed (km/h) and direction (degrees), their means, vector-mean speed.",
                inputs: &[input("speed", "km/h", "wind speed"), input("direction", "degree", "wind direction")],
                params: &[],
                min_values: 1,
            },
            OperationSpec {
                name: "fortran_moisture_transport",
                description: "Fortran: specific humidity from dewpoint and pressure (Bolton 1980 vapour pressure, q = 0.622 e / (p - 0.378 e)) times wind speed (m/s): mean and maximum moisture flux q·|V| in g/kg·m/s.",
                inputs: &[
                    input("dewpoint", "degC", "dewpoint"),
                    input("pressure", "hPa", "pressure"),
                    input("speed", "km/h", "wind speed"),
                ],
                params: &[],
                min_values: 1,
            },
        ],
        install_hint: "run scripts/bootstrap.sh (apt: gfortran)",
        tested_here: true,
    },
];

impl Environment {
    /// Whether the environment is input-dependent in the sense of App. C.5
    /// ("Core libraries retain the paired manifest; input-dependent
    /// environments draw a difficulty-balanced compatible manifest"). The
    /// paper names the core ones in App. D.6: "R climate, Julia, and CDO
    /// often accept the available time series or grids directly; other
    /// adapters require variables, record lengths, or sampling structures
    /// that many event packages do not contain". So every environment but
    /// those three is input-dependent.
    pub fn is_input_dependent(&self) -> bool {
        !matches!(self.slug, "r-climate" | "julia" | "cdo")
    }
}

/// An environment by its command-line spelling or paper name
/// (case-insensitive).
pub fn environment(name: &str) -> Option<&'static Environment> {
    ENVIRONMENTS
        .iter()
        .find(|e| e.slug.eq_ignore_ascii_case(name) || e.name.eq_ignore_ascii_case(name))
}

/// The environment and spec of an operation name.
pub fn operation(name: &str) -> Option<(&'static Environment, &'static OperationSpec)> {
    ENVIRONMENTS
        .iter()
        .flat_map(|e| e.operations.iter().map(move |o| (e, o)))
        .find(|(_, o)| o.name == name)
}

impl OperationSpec {
    /// Fewest values of the first input the method needs with its default
    /// parameters: [`OperationSpec::min_values`], except where a default
    /// sets a larger need (R's GEV fits at least 10 blocks of the default
    /// 24 values, `adapters/r_climate.R`). What compatibility checks (a
    /// call may give other parameters; the tool checks `min_values`).
    pub fn min_values_at_defaults(&self) -> usize {
        match self.name {
            "r_climate_gev" => 10 * 24,
            _ => self.min_values,
        }
    }

    /// The JSON Schema of the operation's arguments: one series reference
    /// (`{path, field, time_field?, start?, end?, units?}`) per input and the
    /// parameters.
    pub fn schema(&self) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for i in self.inputs {
            let units = if i.default_units.is_empty() {
                "units of the values (optional)".to_string()
            } else {
                format!("units of the values (default {})", i.default_units)
            };
            properties.insert(
                i.name.into(),
                json!({
                    "type": "object",
                    "description": format!("{}: a package file and the field holding it", i.description),
                    "properties": {
                        "path": {"type": "string", "description": "package-relative file"},
                        "field": {"type": "string", "description": "dotted JSON path (e.g. daily.temperature_2m_max) or CSV column"},
                        "time_field": {"type": "string", "description": "the time labels (e.g. daily.time)"},
                        "start": {"type": "string"},
                        "end": {"type": "string"},
                        "units": {"type": "string", "description": units}
                    },
                    "required": ["path", "field"]
                }),
            );
            if i.required {
                required.push(i.name);
            }
        }
        for p in self.params {
            let schema = match p.kind {
                "array" => {
                    json!({"type": "array", "items": {"type": "number"}, "description": p.description})
                }
                kind => json!({"type": kind, "description": p.description}),
            };
            properties.insert(p.name.into(), schema);
            if p.required {
                required.push(p.name);
            }
        }
        json!({"type": "object", "properties": properties, "required": required})
    }
}
