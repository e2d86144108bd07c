//! Closed vocabularies of the release (hazard families, capability
//! dimensions, difficulty levels, evaluation modes), each with a fallback so
//! that an unknown label never stops a task from loading.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A label outside the known vocabulary, kept verbatim.
            Other(String),
        }

        impl $name {
            /// Every known label, in the order the release documents them.
            pub const KNOWN: &'static [$name] = &[ $( $name::$variant ),+ ];

            /// The label exactly as written in the release.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $text, )+
                    $name::Other(text) => text,
                }
            }

            /// Parses a label; unknown labels become [`Self::Other`].
            pub fn parse(text: &str) -> Self {
                match text {
                    $( $text => $name::$variant, )+
                    other => $name::Other(other.to_string()),
                }
            }

            /// Whether this is a label of the known vocabulary.
            pub fn is_known(&self) -> bool {
                !matches!(self, $name::Other(_))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                Ok($name::parse(&text))
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name::Other(String::new())
            }
        }
    };
}

string_enum! {
    /// The 19 hazard families of the release (paper §3.1, Table 1).
    HazardFamily {
        /// Heat waves and urban heat exposure.
        HeatWaveUrbanHeat = "heat_wave_urban_heat",
        /// Heat waves compounded by drought.
        HeatWaveDrought = "heat_wave_drought",
        /// Cold waves and winter storms.
        ColdWaveWinterStorm = "cold_wave_winter_storm",
        /// Extreme precipitation and pluvial floods.
        ExtremePrecipPluvialFlood = "extreme_precip_pluvial_flood",
        /// River and coastal floods.
        RiverCoastalFlood = "river_coastal_flood",
        /// Tropical cyclones.
        TropicalCyclone = "tropical_cyclone",
        /// Extratropical storms and severe convection.
        ExtratropicalStormSevereConvection = "extratropical_storm_severe_convection",
        /// Atmospheric rivers and monsoon extremes.
        AtmosphericRiverMonsoonExtremes = "atmospheric_river_monsoon_extremes",
        /// Wildfires, burn scars and smoke.
        WildfireBurnSmoke = "wildfire_burn_smoke",
        /// Air pollution, smoke and heat.
        AirPollutionSmokeHeat = "air_pollution_smoke_heat",
        /// Dust and sand storms.
        DustSandstormExtreme = "dust_sandstorm_extreme",
        /// Agricultural drought and crop stress.
        DroughtAgriculturalStress = "drought_agricultural_stress",
        /// Earthquakes, tsunamis and other geophysical hazards.
        EarthquakeTsunamiGeophysical = "earthquake_tsunami_geophysical",
        /// Volcanic ash and lahars.
        VolcanoAshLahar = "volcano_ash_lahar",
        /// Landslides and mass movements.
        LandslideMassMovement = "landslide_mass_movement",
        /// Cryosphere hazards: avalanches, GLOFs, snowmelt.
        CryosphereAvalancheGlofSnowmelt = "cryosphere_avalanche_glof_snowmelt",
        /// Marine heatwaves and coastal ecosystems.
        MarineHeatwaveCoastalEcosystem = "marine_heatwave_coastal_ecosystem",
        /// Climate teleconnections (ENSO, IOD, MJO).
        ClimateTeleconnectionEnsoIodMjo = "climate_teleconnection_enso_iod_mjo",
        /// Compound and cascading events.
        CompoundCascadingEvents = "compound_cascading_events",
    }
}

string_enum! {
    /// The seven capability dimensions of the task taxonomy (paper §3.2).
    CapabilityDimension {
        /// Physical mechanism.
        PhysicalMechanism = "physical_mechanism",
        /// Quantitative calculation.
        QuantitativeCalculation = "quantitative_calculation",
        /// Causal chain.
        CausalChain = "causal_chain",
        /// Spatiotemporal process.
        SpatiotemporalProcess = "spatiotemporal_process",
        /// Multi-source evidence.
        MultiSourceEvidence = "multi_source_evidence",
        /// Ranking and decision.
        RankingDecision = "ranking_decision",
        /// Remote sensing and geospatial analysis.
        RemoteSensingGeospatial = "remote_sensing_geospatial",
    }
}

/// Difficulty level L2–L5 (paper §3.2). The release writes it either as the
/// bare level (`"L3"`) or with a suffix (`"L3_process_mechanism_reasoning"`);
/// both parse to the same level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DifficultyLevel {
    /// L2: quantitative event diagnosis.
    L2,
    /// L3: process and mechanism reasoning.
    L3,
    /// L4: Earth-system causal reasoning.
    L4,
    /// L5: research synthesis.
    L5,
}

impl DifficultyLevel {
    /// Parses `"L3"` or `"L3_process_mechanism_reasoning"`; `None` otherwise.
    pub fn parse(text: &str) -> Option<Self> {
        let head = text.trim().split('_').next().unwrap_or("");
        match head.to_ascii_uppercase().as_str() {
            "L2" => Some(DifficultyLevel::L2),
            "L3" => Some(DifficultyLevel::L3),
            "L4" => Some(DifficultyLevel::L4),
            "L5" => Some(DifficultyLevel::L5),
            _ => None,
        }
    }

    /// `"L2"` … `"L5"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DifficultyLevel::L2 => "L2",
            DifficultyLevel::L3 => "L3",
            DifficultyLevel::L4 => "L4",
            DifficultyLevel::L5 => "L5",
        }
    }
}

impl fmt::Display for DifficultyLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a task is scored, classified from the release's free-form
/// `evaluation_mode` label (14 spellings on the dev slice, e.g. `hybrid`,
/// `deterministic_numeric_json`, `llm_judge_with_computed_anchors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EvaluationMode {
    /// Scored from the answer alone against computed values.
    Deterministic,
    /// Computed anchors plus judged reasoning.
    Hybrid,
    /// Judged by a model against anchors or a rubric.
    LlmJudge,
    /// A label that none of the rules recognises.
    Unknown,
}

impl EvaluationMode {
    /// Classifies a raw label: `hybrid*` → Hybrid; `deterministic*` →
    /// Deterministic (even when reasoning or a rubric is also judged, the
    /// label's head word decides); `llm_judge*`, `rubric*` → LlmJudge.
    pub fn classify(label: &str) -> Self {
        let lower = label.trim().to_ascii_lowercase();
        if lower.starts_with("hybrid") {
            EvaluationMode::Hybrid
        } else if lower.starts_with("deterministic") {
            EvaluationMode::Deterministic
        } else if lower.starts_with("llm") || lower.starts_with("rubric") || lower.contains("judge")
        {
            EvaluationMode::LlmJudge
        } else {
            EvaluationMode::Unknown
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_and_fall_back() {
        assert_eq!(HazardFamily::KNOWN.len(), 19);
        assert_eq!(CapabilityDimension::KNOWN.len(), 7);
        for family in HazardFamily::KNOWN {
            assert_eq!(&HazardFamily::parse(family.as_str()), family);
        }
        let odd = HazardFamily::parse("meteor_strike");
        assert_eq!(odd, HazardFamily::Other("meteor_strike".into()));
        assert!(!odd.is_known());
        assert_eq!(
            DifficultyLevel::parse("L4_earth_system_causal_reasoning"),
            Some(DifficultyLevel::L4)
        );
        assert_eq!(DifficultyLevel::parse("L9"), None);
        assert_eq!(
            EvaluationMode::classify("deterministic_with_llm_judging"),
            EvaluationMode::Deterministic
        );
        assert_eq!(
            EvaluationMode::classify("llm_judge_with_computed_anchors"),
            EvaluationMode::LlmJudge
        );
        assert_eq!(
            EvaluationMode::classify("rubric_numeric"),
            EvaluationMode::LlmJudge
        );
    }
}
