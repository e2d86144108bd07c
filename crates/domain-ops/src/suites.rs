//! Specialist-operation suites (paper App. A.4, Table 7): named subsets of
//! this project's own Rust domain operations that a run can be required to
//! use through the controller's required-tool policy
//! (`earthverse run --require-suite NAME`).
//!
//! They are **not** the scientific libraries: the real MetPy, xclim, CDO,
//! NCO and the other environments of Table 7 are `earthverse-environments`
//! (`earthverse run --require-environment NAME`). To keep anyone from
//! mistaking them for those libraries the suites are named `native_*`
//! (native Rust operations): `native_meteo` (thermodynamics and
//! kinematics), `native_indices` (climate indices on daily series) and
//! `native_grid` (gridded operators). Their former names `metpy_like`,
//! `xclim_like` and `cdo_like` are still read as aliases ([`ALIASES`]), so
//! old command lines and studies keep working.

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
        name: "native_meteo",
        description: "native Rust thermodynamics and kinematics (not MetPy)",
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
        name: "native_indices",
        description: "native Rust climate indices on daily series (not xclim)",
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
        name: "native_grid",
        description: "native Rust gridded operators (not CDO or NCO)",
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

/// Former names of the suites (until their rename to `native_*`), each
/// with the suite it now names: still accepted.
pub const ALIASES: &[(&str, &str)] = &[
    ("metpy_like", "native_meteo"),
    ("xclim_like", "native_indices"),
    ("cdo_like", "native_grid"),
];

/// A suite by name, or by a former name ([`ALIASES`]).
pub fn suite(name: &str) -> Option<&'static Suite> {
    let name = ALIASES
        .iter()
        .find(|(old, _)| *old == name)
        .map_or(name, |(_, new)| new);
    SUITES.iter().find(|s| s.name == name)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn former_names_read_as_aliases_of_the_native_suites() {
        for (old, new) in ALIASES {
            assert_eq!(suite(old).unwrap().name, *new);
            assert_eq!(suite(new).unwrap().name, *new);
        }
        assert!(SUITES.iter().all(|s| s.name.starts_with("native_")));
        assert!(suite("metpy").is_none());
    }
}
