//! Specialist-environment suites (paper App. A.4, Table 7): named subsets of
//! operations modelled on MetPy, xclim and CDO/NCO that a run can be
//! required to use through the controller's required-tool policy.
//!
//! These are our own Rust operations, named `*_like` so that nobody takes
//! them for the libraries: the real MetPy, xclim, CDO, NCO and the other
//! environments of Table 7 are `earthverse-environments`
//! (`earthverse run --require-environment NAME`).

/// A named suite of operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suite {
    /// Suite name.
    pub name: &'static str,
    /// What it models.
    pub description: &'static str,
    /// Operation names.
    pub operations: &'static [&'static str],
}

/// The suites.
pub const SUITES: &[Suite] = &[
    Suite {
        name: "metpy_like",
        description: "MetPy-style thermodynamics and kinematics",
        operations: &[
            "wind_speed",
            "wind_direction",
            "dewpoint_from_rh",
            "rh_from_dewpoint",
            "saturation_vapor_pressure",
            "potential_temperature",
            "equivalent_potential_temperature",
            "wet_bulb_temperature",
            "lcl",
            "cape_cin",
            "precipitable_water",
            "heat_index",
            "windchill",
            "apparent_temperature",
        ],
    },
    Suite {
        name: "xclim_like",
        description: "xclim-style climate indices on daily series",
        operations: &[
            "heat_wave_frequency",
            "heat_wave_max_length",
            "tx_days_above",
            "frost_days",
            "warm_spell_duration_index",
            "cold_spell_duration_index",
            "degree_days",
            "max_consecutive_dry_days",
            "max_consecutive_wet_days",
            "max_n_day_precip",
            "heavy_precip_days",
            "very_wet_day_total",
            "spi",
            "spei",
        ],
    },
    Suite {
        name: "cdo_like",
        description: "CDO/NCO-style gridded operators",
        operations: &[
            "netcdf_info",
            "netcdf_subset",
            "netcdf_field_mean",
            "netcdf_time_stat",
            "netcdf_anomaly",
            "raster_info",
            "raster_band_stats",
        ],
    },
];

/// A suite by name.
pub fn suite(name: &str) -> Option<&'static Suite> {
    SUITES.iter().find(|s| s.name == name)
}
