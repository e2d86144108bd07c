//! Catalogue presentation and routing (paper Appendix A.2, A.3.2; Tables 4
//! and 6): which tools a run sees and how they are named and described.
//!
//! Conditions of the studies, as reusable pieces a controller picks per run:
//! - **fixed subsets** of the registry, nested: 6, 10, 20, 40, 70, 100 or
//!   all tools ([`CatalogueCondition::Fixed`], [`CatalogueCondition::Full`]);
//! - a **top-k router** over tool descriptions (k = 10 or 20) behind the
//!   [`ToolRouter`] trait; [`Bm25Router`] scores lexically, an embedding
//!   model can plug in behind the same trait;
//! - a **workflow-profile router** that first picks a domain workflow, then
//!   exposes its tools ([`WorkflowProfileRouter`]);
//! - a **hierarchical catalogue**: domains first, then the tools of the
//!   chosen domain ([`HierarchicalCatalogue`]);
//! - **descriptive names** (intended-use and exclusion cues), **opaque
//!   names** (same tools, meaningless names) and **dynamic descriptions**
//!   (candidates re-ranked at each step) ([`Naming`], [`DynamicCatalogue`]);
//! - **optional meteorological access** (App. A.3.4, Table 4d): the same
//!   compact shortlist of meteorological operations for every task
//!   ([`CatalogueCondition::CompactMeteorology`]), or at most three
//!   meteorological operations routed on task and package cues
//!   ([`CatalogueCondition::CueRoutedMeteorology`], [`cue_routed_meteorology`]).
//!
//! The six research tools are always present unless a plan removes them on
//! purpose ([`CataloguePlan::keep_research_tools`]).

use crate::registry::{Registry, ToolDescriptor};
use crate::research::RESEARCH_TOOL_NAMES;
use crate::tool::ToolFamily;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Catalogue sizes of the tool-catalogue study (Table 6 panel a).
pub const FIXED_SUBSET_SIZES: [usize; 7] = [6, 10, 20, 40, 70, 100, 170];
/// Router sizes of the routing study (Table 6 panel b).
pub const ROUTER_K: [usize; 2] = [10, 20];

/// Which tools a run sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "condition")]
#[non_exhaustive]
pub enum CatalogueCondition {
    /// The first `size` tools of the registry order (research tools first,
    /// then domain operations in registration order): nested subsets.
    Fixed {
        /// Number of tools.
        size: usize,
    },
    /// Every registered tool.
    Full,
    /// The research tools plus the `k` best-scoring other tools for the task.
    TopK {
        /// Number of routed tools.
        k: usize,
    },
    /// The research tools plus the tools of the best-matching workflow profile.
    WorkflowProfile,
    /// Domains first, then the tools of a chosen domain.
    Hierarchical,
    /// The research tools, the general domain families (reports and text,
    /// time series, output assembly) and the specialist families of the
    /// best-matching workflow profile: a mixed general/expert suite
    /// (Table 6b; the paper names the suite, the composition is ours).
    GeneralExpert,
    /// The research tools plus the same compact shortlist of meteorological
    /// operations for every task ([`COMPACT_METEOROLOGY_SUITE`]; App. A.3.4
    /// fixes "the same compact shortlist", the list is ours).
    CompactMeteorology,
    /// The research tools plus at most `max` meteorological operations
    /// routed on task and package cues ([`cue_routed_meteorology`]; App.
    /// A.3.4 fixes "at most three", [`CUE_ROUTED_METEOROLOGY_MAX`]).
    CueRoutedMeteorology {
        /// At most this many operations.
        max: usize,
    },
}

/// The compact meteorology suite of App. A.3.4 (Table 4d), offered to
/// every task besides the research tools. The paper fixes only that it is
/// one compact shortlist for all tasks; these eight (ours) cover the heat,
/// humidity, precipitation and wind quantities the release's hazard
/// families ask for.
pub const COMPACT_METEOROLOGY_SUITE: [&str; 8] = [
    "heat_index",
    "apparent_temperature",
    "wet_bulb_temperature",
    "heat_wave_max_length",
    "tx_days_above",
    "max_n_day_precip",
    "heavy_precip_days",
    "wind_speed",
];

/// At most this many meteorological operations in the cue-routed condition
/// (App. A.3.4: "task and package cues ... expose at most three").
pub const CUE_ROUTED_METEOROLOGY_MAX: usize = 3;

/// The cue text of a package for the cue-routed condition: for each
/// package-relative file path, its inventory category (the folder under
/// `data/`) and its file name without extensions, one file per line. The
/// `data/` prefix and the extensions (`.json`, `.csv`, ...) are left out:
/// every package has them, so they are no cue (ours).
pub fn package_cues<S: AsRef<str>>(paths: &[S]) -> String {
    let mut out = String::new();
    for p in paths {
        let p = p.as_ref();
        let p = p.strip_prefix("data/").unwrap_or(p);
        let (folder, name) = p.rsplit_once('/').unwrap_or(("", p));
        let stem = name.split('.').next().unwrap_or(name);
        out.push_str(folder);
        out.push(' ');
        out.push_str(stem);
        out.push('\n');
    }
    out
}

/// The cue-routed meteorological operations (App. A.3.4): the
/// meteorology-and-climate operations of `tools` scored by `router`
/// against the task text and the package cues (`cues`, e.g.
/// [`package_cues`]), the `max` best with a positive score (ties by
/// catalogue order). A task whose cues match no meteorological operation
/// is offered none.
pub fn cue_routed_meteorology(
    tools: &[ToolDescriptor],
    cues: &str,
    max: usize,
    router: &dyn ToolRouter,
) -> Vec<String> {
    let meteorology: Vec<ToolDescriptor> = tools
        .iter()
        .filter(|d| d.family == ToolFamily::MeteorologyClimate)
        .cloned()
        .collect();
    let scores = router.scores(cues, &meteorology);
    router
        .top_k(cues, &meteorology, max)
        .into_iter()
        .filter(|name| {
            meteorology
                .iter()
                .position(|d| &d.name == name)
                .is_some_and(|i| scores[i] > 0.0)
        })
        .collect()
}

/// Domain families every `GeneralExpert` suite includes: operations on
/// text, tables and series that any investigation may need.
pub const GENERAL_FAMILIES: [ToolFamily; 3] = [
    ToolFamily::ReportsText,
    ToolFamily::TimeSeries,
    ToolFamily::OutputAssembly,
];

/// How tools are named and described to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Naming {
    /// The registry's names and descriptions.
    #[default]
    Plain,
    /// Names prefixed with their domain and descriptions with intended-use
    /// and exclusion cues.
    Descriptive,
    /// Meaningless names (`tool_001` ...), same tools, same descriptions.
    Opaque,
}

/// A complete presentation plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CataloguePlan {
    /// Which tools.
    pub condition: CatalogueCondition,
    /// How they are named.
    pub naming: Naming,
    /// Re-rank candidates at each step ([`DynamicCatalogue`]).
    pub dynamic_descriptions: bool,
    /// Keep the six research tools (a condition may remove them on purpose,
    /// e.g. the expert-only suite).
    pub keep_research_tools: bool,
    /// Tools shown whatever the condition selects (after the selection, in
    /// registry order): the operations a run is required to use (App. A.4:
    /// `--require-environment` under a routed catalogue, Table 7's rows on
    /// the Top-20 router). Not applied to the hierarchical catalogue.
    #[serde(default)]
    pub pinned: Vec<String>,
}

impl Default for CataloguePlan {
    fn default() -> Self {
        Self {
            condition: CatalogueCondition::Full,
            naming: Naming::Plain,
            dynamic_descriptions: false,
            keep_research_tools: true,
            pinned: Vec::new(),
        }
    }
}

/// One tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PresentedTool {
    /// The name shown (maybe descriptive or opaque).
    pub shown_name: String,
    /// The registry name the call is routed to.
    pub registry_name: String,
    /// Description shown.
    pub description: String,
    /// Domain family.
    pub family: ToolFamily,
    /// Argument schema.
    pub parameters_schema: Value,
}

/// The tools a run sees, with the map from shown names back to the registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PresentedCatalogue {
    /// The tools in presentation order.
    pub tools: Vec<PresentedTool>,
}

impl PresentedCatalogue {
    /// The registry name of a shown name (also accepts registry names of
    /// presented tools).
    pub fn resolve(&self, shown: &str) -> Option<&str> {
        self.tools
            .iter()
            .find(|t| t.shown_name == shown)
            .or_else(|| self.tools.iter().find(|t| t.registry_name == shown))
            .map(|t| t.registry_name.as_str())
    }

    /// Shown names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.shown_name.as_str()).collect()
    }

    /// The catalogue as text for the solver prompt (`<<REGISTERED_TOOL_CATALOGUE>>`):
    /// one line per tool with its name, arguments and description.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for t in &self.tools {
            let args: Vec<String> = t
                .parameters_schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            out.push_str(&format!(
                "- {}({}): {}\n",
                t.shown_name,
                args.join(", "),
                t.description
            ));
        }
        out
    }
}

/// Scores tools against a text (task question, package metadata, or the
/// current step). Implementations: [`Bm25Router`]; an embedding model can
/// implement it too.
pub trait ToolRouter: Send + Sync {
    /// Router name for records.
    fn name(&self) -> &str;
    /// Scores of every tool for `query`, in the order of `tools`.
    fn scores(&self, query: &str, tools: &[ToolDescriptor]) -> Vec<f64>;

    /// The names of the `k` best tools (ties by catalogue order).
    fn top_k(&self, query: &str, tools: &[ToolDescriptor], k: usize) -> Vec<String> {
        let scores = self.scores(query, tools);
        let mut order: Vec<usize> = (0..tools.len()).collect();
        order.sort_by(|&a, &b| {
            scores[b]
                .partial_cmp(&scores[a])
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.cmp(&b))
        });
        order
            .into_iter()
            .take(k)
            .map(|i| tools[i].name.clone())
            .collect()
    }
}

/// Lower-cased alphanumeric tokens (names split on `_`).
pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| t.len() > 1)
        .map(str::to_lowercase)
        .collect()
}

fn family_words(family: ToolFamily) -> &'static str {
    match family {
        ToolFamily::Research => "research files package read search python",
        ToolFamily::ReportsText => "reports text documents claims",
        ToolFamily::TimeSeries => "time series extreme value return period trend",
        ToolFamily::VectorExposure => "vector exposure population buildings roads polygons",
        ToolFamily::RasterEo => "raster earth observation satellite imagery remote sensing",
        ToolFamily::MeteorologyClimate => {
            "meteorology climate temperature precipitation wind humidity"
        }
        ToolFamily::FireGeophysics => "fire geophysics earthquake burn seismic",
        ToolFamily::Infrastructure => "infrastructure roads power network facilities",
        ToolFamily::OutputAssembly => "output assembly answer units report",
    }
}

/// The text a router scores a tool by: its name with `_` as spaces, its
/// description and its family's words.
pub fn routing_text(t: &ToolDescriptor) -> String {
    format!(
        "{} {} {}",
        t.name.replace('_', " "),
        t.description,
        family_words(t.family)
    )
}

fn document(t: &ToolDescriptor) -> Vec<String> {
    tokenize(&routing_text(t))
}

/// Okapi BM25 over tool names, descriptions and family words. The index
/// of the last tool list scored is kept, so routing again over the same
/// catalogue (a dynamic catalogue, every step) only scores the query.
#[derive(Debug)]
pub struct Bm25Router {
    /// Term-frequency saturation (default 1.2).
    pub k1: f64,
    /// Length normalisation (default 0.75).
    pub b: f64,
    index: std::sync::Mutex<Option<(Vec<String>, Arc<Bm25Index>)>>,
}

impl Bm25Router {
    /// A router with these BM25 parameters.
    pub fn new(k1: f64, b: f64) -> Self {
        Self {
            k1,
            b,
            index: std::sync::Mutex::new(None),
        }
    }

    fn index_of(&self, tools: &[ToolDescriptor]) -> Arc<Bm25Index> {
        let same = |names: &[String]| {
            names.len() == tools.len() && names.iter().zip(tools).all(|(n, t)| *n == t.name)
        };
        if let Ok(cached) = self.index.lock() {
            if let Some((names, index)) = cached.as_ref() {
                if same(names) {
                    return Arc::clone(index);
                }
            }
        }
        let docs: Vec<Vec<String>> = tools.iter().map(document).collect();
        let index = Arc::new(Bm25Index::new(&docs, self.k1, self.b));
        if let Ok(mut cached) = self.index.lock() {
            *cached = Some((
                tools.iter().map(|t| t.name.clone()).collect(),
                Arc::clone(&index),
            ));
        }
        index
    }
}

impl Clone for Bm25Router {
    fn clone(&self) -> Self {
        Self::new(self.k1, self.b)
    }
}

impl Default for Bm25Router {
    fn default() -> Self {
        Self::new(1.2, 0.75)
    }
}

impl ToolRouter for Bm25Router {
    fn name(&self) -> &str {
        "bm25"
    }

    fn scores(&self, query: &str, tools: &[ToolDescriptor]) -> Vec<f64> {
        self.index_of(tools).scores(&tokenize(query))
    }
}

/// A BM25 index of tokenised documents: postings of each term (document,
/// term frequency), document lengths and the average length.
#[derive(Debug, Clone)]
pub struct Bm25Index {
    k1: f64,
    b: f64,
    lengths: Vec<f64>,
    average: f64,
    postings: HashMap<String, Vec<(usize, f64)>>,
}

impl Bm25Index {
    /// The index of `docs` with BM25 parameters `k1` and `b`.
    pub fn new(docs: &[Vec<String>], k1: f64, b: f64) -> Self {
        let mut postings: HashMap<String, Vec<(usize, f64)>> = HashMap::new();
        for (i, doc) in docs.iter().enumerate() {
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            for term in doc {
                *counts.entry(term.as_str()).or_insert(0) += 1;
            }
            for (term, tf) in counts {
                postings
                    .entry(term.to_string())
                    .or_default()
                    .push((i, tf as f64));
            }
        }
        let lengths: Vec<f64> = docs.iter().map(|d| d.len() as f64).collect();
        let average = if docs.is_empty() {
            0.0
        } else {
            lengths.iter().sum::<f64>() / docs.len() as f64
        };
        Self {
            k1,
            b,
            lengths,
            average,
            postings,
        }
    }

    /// BM25 score of every document for a tokenised query. A term that
    /// occurs m times in the query counts m times (as in summing over the
    /// query's tokens); terms are visited in order of first occurrence.
    pub fn scores(&self, query: &[String]) -> Vec<f64> {
        let n = self.lengths.len() as f64;
        let mut scores = vec![0.0; self.lengths.len()];
        let mut multiplicity: Vec<(&str, f64)> = Vec::new();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for term in query {
            match seen.get(term.as_str()) {
                Some(&at) => multiplicity[at].1 += 1.0,
                None => {
                    seen.insert(term.as_str(), multiplicity.len());
                    multiplicity.push((term.as_str(), 1.0));
                }
            }
        }
        for (term, times) in multiplicity {
            let Some(list) = self.postings.get(term) else {
                continue;
            };
            let n_q = list.len() as f64;
            let idf = ((n - n_q + 0.5) / (n_q + 0.5) + 1.0).ln();
            for &(doc, tf) in list {
                let norm = 1.0 - self.b + self.b * self.lengths[doc] / self.average.max(1e-9);
                scores[doc] += times * idf * tf * (self.k1 + 1.0) / (tf + self.k1 * norm);
            }
        }
        scores
    }
}

/// BM25 scores of tokenised documents for a tokenised query
/// ([`Bm25Index`] built once and queried once).
pub fn bm25_scores(query: &[String], docs: &[Vec<String>], k1: f64, b: f64) -> Vec<f64> {
    if docs.is_empty() {
        return Vec::new();
    }
    Bm25Index::new(docs, k1, b).scores(query)
}

/// A domain workflow: cue words and the families of tools it exposes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowProfile {
    /// Profile name.
    pub name: String,
    /// Cue words matched against the task text.
    pub cues: Vec<String>,
    /// Families whose tools the profile exposes.
    pub families: Vec<ToolFamily>,
}

/// Picks the best-matching workflow profile for the task (BM25 over cue
/// words), then exposes every tool of its families. Commits to a domain up
/// front, which the paper finds brittle (App. A.2.2).
#[derive(Debug, Clone)]
pub struct WorkflowProfileRouter {
    /// The profiles.
    pub profiles: Vec<WorkflowProfile>,
}

impl Default for WorkflowProfileRouter {
    fn default() -> Self {
        let p = |name: &str, cues: &str, families: &[ToolFamily]| WorkflowProfile {
            name: name.into(),
            cues: tokenize(cues),
            families: families.to_vec(),
        };
        Self {
            profiles: vec![
                p(
                    "heat_and_drought",
                    "heat heatwave temperature drought dry tmax humidity",
                    &[ToolFamily::MeteorologyClimate, ToolFamily::TimeSeries],
                ),
                p(
                    "flood_and_rain",
                    "flood rainfall precipitation river discharge inundation",
                    &[
                        ToolFamily::MeteorologyClimate,
                        ToolFamily::TimeSeries,
                        ToolFamily::RasterEo,
                    ],
                ),
                p(
                    "storm_and_wind",
                    "storm cyclone hurricane typhoon wind gust pressure surge",
                    &[ToolFamily::MeteorologyClimate, ToolFamily::VectorExposure],
                ),
                p(
                    "fire_and_geohazard",
                    "fire wildfire burn earthquake landslide volcano seismic",
                    &[ToolFamily::FireGeophysics, ToolFamily::RasterEo],
                ),
                p(
                    "exposure_and_impact",
                    "population exposure damage buildings roads infrastructure impact",
                    &[ToolFamily::VectorExposure, ToolFamily::Infrastructure],
                ),
                p(
                    "reports_and_synthesis",
                    "report news claim source timeline article",
                    &[ToolFamily::ReportsText, ToolFamily::OutputAssembly],
                ),
            ],
        }
    }
}

impl WorkflowProfileRouter {
    /// The best profile for a task text.
    pub fn choose(&self, task_text: &str) -> Option<&WorkflowProfile> {
        let docs: Vec<Vec<String>> = self.profiles.iter().map(|p| p.cues.clone()).collect();
        let scores = bm25_scores(&tokenize(task_text), &docs, 1.2, 0.75);
        scores
            .iter()
            .enumerate()
            .max_by(|a, b| {
                a.1.partial_cmp(b.1)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(b.0.cmp(&a.0))
            })
            .filter(|(_, s)| **s > 0.0)
            .map(|(i, _)| &self.profiles[i])
    }
}

/// One domain of the hierarchical catalogue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DomainSummary {
    /// Family.
    pub family: ToolFamily,
    /// Number of tools.
    pub tool_count: usize,
    /// A few tool names as examples.
    pub examples: Vec<String>,
}

/// Domains first, then tools: the model picks a domain, then sees its tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HierarchicalCatalogue {
    /// Always-visible tools (the research tools).
    pub base: PresentedCatalogue,
    /// Domains with counts.
    pub domains: Vec<DomainSummary>,
    /// Tools per domain, presented.
    pub by_domain: BTreeMap<String, Vec<PresentedTool>>,
}

impl HierarchicalCatalogue {
    /// The tools of one domain (by its snake-case family name).
    pub fn expand(&self, family: &str) -> Option<&[PresentedTool]> {
        self.by_domain.get(family).map(Vec::as_slice)
    }
}

fn intended_use(f: ToolFamily) -> &'static str {
    match f {
        ToolFamily::Research => "Use to find, read and compute from package files.",
        ToolFamily::ReportsText => {
            "Use for claims in reports and text; not for gridded or tabular measurements."
        }
        ToolFamily::TimeSeries => {
            "Use on time-indexed records long enough for the method; not on single aggregates."
        }
        ToolFamily::VectorExposure => "Use on vector layers and exposure counts; not on rasters.",
        ToolFamily::RasterEo => {
            "Use on rasters and Earth-observation statistics; not on point series."
        }
        ToolFamily::MeteorologyClimate => {
            "Use on meteorological variables with known units; check the variable exists first."
        }
        ToolFamily::FireGeophysics => "Use for fire and geophysical hazards only.",
        ToolFamily::Infrastructure => "Use for infrastructure networks and facilities.",
        ToolFamily::OutputAssembly => {
            "Use to assemble and check the final answer, not to compute evidence."
        }
    }
}

/// A deterministic opaque name for position `i` (same tools, no meaning).
fn opaque_name(i: usize, registry_name: &str) -> String {
    // FNV-1a of the name keeps the mapping stable across runs but unrelated to meaning.
    use std::hash::Hasher;
    let mut h = fnv::FnvHasher::default();
    h.write(registry_name.as_bytes());
    format!("tool_{:03}_{:04x}", i + 1, h.finish() & 0xffff)
}

fn present_tool(i: usize, d: &ToolDescriptor, naming: Naming) -> PresentedTool {
    let (shown_name, description) = match naming {
        Naming::Plain => (d.name.clone(), d.description.clone()),
        Naming::Descriptive => {
            let shown = if d.family == ToolFamily::Research {
                d.name.clone()
            } else {
                format!("{}__{}", d.family.as_str(), d.name)
            };
            (
                shown,
                format!("{} {}", d.description, intended_use(d.family)),
            )
        }
        Naming::Opaque => (opaque_name(i, &d.name), d.description.clone()),
    };
    PresentedTool {
        shown_name,
        registry_name: d.name.clone(),
        description,
        family: d.family,
        parameters_schema: d.parameters_schema.clone(),
    }
}

/// The registry's tools in catalogue order: the research tools first (in
/// [`RESEARCH_TOOL_NAMES`] order), then every other tool in registration
/// order. Build it once and route with [`present_from`] when presenting
/// the same registry many times (a dynamic catalogue, every step).
pub fn ordered_descriptors(registry: &Registry) -> Vec<ToolDescriptor> {
    let defs = registry.definitions();
    let mut research: Vec<ToolDescriptor> = RESEARCH_TOOL_NAMES
        .iter()
        .filter_map(|n| defs.iter().find(|d| d.name == *n).cloned())
        .collect();
    research.extend(
        defs.into_iter()
            .filter(|d| !RESEARCH_TOOL_NAMES.contains(&d.name.as_str())),
    );
    research
}

/// Builds the catalogue a run sees for `task_text` under `plan`.
pub fn present(
    registry: &Registry,
    plan: &CataloguePlan,
    task_text: &str,
    router: &dyn ToolRouter,
) -> PresentedCatalogue {
    present_from(&ordered_descriptors(registry), plan, task_text, router)
}

/// [`present`] over tools already in catalogue order
/// ([`ordered_descriptors`]).
pub fn present_from(
    all: &[ToolDescriptor],
    plan: &CataloguePlan,
    task_text: &str,
    router: &dyn ToolRouter,
) -> PresentedCatalogue {
    let split = all
        .iter()
        .take_while(|d| RESEARCH_TOOL_NAMES.contains(&d.name.as_str()))
        .count();
    let (research, others) = all.split_at(split);
    let keep = |d: &&ToolDescriptor| plan.keep_research_tools || d.family != ToolFamily::Research;
    let base: &[ToolDescriptor] = if plan.keep_research_tools {
        research
    } else {
        &[]
    };
    let chosen: Vec<&ToolDescriptor> = match &plan.condition {
        CatalogueCondition::Full | CatalogueCondition::Hierarchical => {
            all.iter().filter(keep).collect()
        }
        CatalogueCondition::Fixed { size } => all.iter().filter(keep).take(*size).collect(),
        CatalogueCondition::TopK { k } => {
            let picked = router.top_k(task_text, others, *k);
            base.iter()
                .chain(
                    picked
                        .iter()
                        .filter_map(|n| others.iter().find(|d| &d.name == n)),
                )
                .collect()
        }
        CatalogueCondition::WorkflowProfile | CatalogueCondition::GeneralExpert => {
            let profiles = WorkflowProfileRouter::default();
            let mut families = profiles
                .choose(task_text)
                .map(|p| p.families.clone())
                .unwrap_or_default();
            if plan.condition == CatalogueCondition::GeneralExpert {
                families.extend(GENERAL_FAMILIES);
            }
            base.iter()
                .chain(others.iter().filter(|d| families.contains(&d.family)))
                .collect()
        }
        CatalogueCondition::CompactMeteorology => base
            .iter()
            .chain(
                COMPACT_METEOROLOGY_SUITE
                    .iter()
                    .filter_map(|n| others.iter().find(|d| d.name == *n)),
            )
            .collect(),
        CatalogueCondition::CueRoutedMeteorology { max } => {
            let picked = cue_routed_meteorology(others, task_text, *max, router);
            base.iter()
                .chain(
                    picked
                        .iter()
                        .filter_map(|n| others.iter().find(|d| &d.name == n)),
                )
                .collect()
        }
    };
    let mut chosen = chosen;
    for d in others.iter().filter(|d| plan.pinned.contains(&d.name)) {
        if !chosen.iter().any(|c| c.name == d.name) {
            chosen.push(d);
        }
    }
    present_selection(all, &chosen, plan.naming)
}

/// Presents `chosen` (a selection of `all`, the registry order) under
/// `naming`. An opaque name derives from the tool's position in the whole
/// registry, so a tool keeps its shown name whatever else is routed with
/// it (stable across the steps of a dynamic catalogue).
fn present_selection(
    all: &[ToolDescriptor],
    chosen: &[&ToolDescriptor],
    naming: Naming,
) -> PresentedCatalogue {
    PresentedCatalogue {
        tools: chosen
            .iter()
            .map(|d| {
                let position = all.iter().position(|a| a.name == d.name).unwrap_or(0);
                present_tool(position, d, naming)
            })
            .collect(),
    }
}

/// The hierarchical catalogue of a registry.
pub fn hierarchical(registry: &Registry, plan: &CataloguePlan) -> HierarchicalCatalogue {
    let all = ordered_descriptors(registry);
    let mut base = Vec::new();
    let mut by_domain: BTreeMap<String, Vec<PresentedTool>> = BTreeMap::new();
    let mut families: Vec<ToolFamily> = Vec::new();
    for (i, d) in all.iter().enumerate() {
        let t = present_tool(i, d, plan.naming);
        if d.family == ToolFamily::Research {
            if plan.keep_research_tools {
                base.push(t);
            }
        } else {
            if !families.contains(&d.family) {
                families.push(d.family);
            }
            by_domain
                .entry(d.family.as_str().to_string())
                .or_default()
                .push(t);
        }
    }
    let domains = families
        .into_iter()
        .map(|f| {
            let tools = &by_domain[f.as_str()];
            DomainSummary {
                family: f,
                tool_count: tools.len(),
                examples: tools.iter().take(3).map(|t| t.shown_name.clone()).collect(),
            }
        })
        .collect();
    HierarchicalCatalogue {
        base: PresentedCatalogue { tools: base },
        domains,
        by_domain,
    }
}

/// Dynamic descriptions: the candidate tools are retrieved again at each
/// step from the task and the latest observation; shown names stay stable.
pub struct DynamicCatalogue<'a> {
    registry: &'a Registry,
    router: &'a dyn ToolRouter,
    plan: CataloguePlan,
    task_text: String,
}

impl std::fmt::Debug for DynamicCatalogue<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicCatalogue")
            .field("router", &self.router.name())
            .field("plan", &self.plan)
            .finish()
    }
}

impl<'a> DynamicCatalogue<'a> {
    /// A dynamic catalogue over `registry`.
    pub fn new(
        registry: &'a Registry,
        router: &'a dyn ToolRouter,
        plan: CataloguePlan,
        task_text: impl Into<String>,
    ) -> Self {
        Self {
            registry,
            router,
            plan,
            task_text: task_text.into(),
        }
    }

    /// The catalogue for the next step, routed on the task text plus the
    /// step's context (e.g. the last observation).
    pub fn for_step(&self, step_context: &str) -> PresentedCatalogue {
        let query = format!("{} {}", self.task_text, step_context);
        present(self.registry, &self.plan, &query, self.router)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::research::ResearchToolsConfig;
    use crate::tool::{Tool, ToolContext, ToolOutput};
    use async_trait::async_trait;
    use std::sync::Arc;

    struct Fake(&'static str, &'static str, ToolFamily);

    #[async_trait]
    impl Tool for Fake {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            self.1
        }
        fn family(&self) -> ToolFamily {
            self.2
        }
        fn parameters_schema(&self) -> Value {
            serde_json::json!({"type": "object", "properties": {}})
        }
        async fn call(&self, _ctx: &ToolContext, _args: Value) -> ToolOutput {
            ToolOutput::ok(Value::Null, Vec::new())
        }
    }

    fn registry() -> Registry {
        let mut r = Registry::with_research_tools(ResearchToolsConfig::default());
        for t in [
            Fake(
                "gev_return_level",
                "Fit a GEV distribution to annual maxima and return the return level.",
                ToolFamily::TimeSeries,
            ),
            Fake(
                "heat_index",
                "Heat index from temperature and relative humidity.",
                ToolFamily::MeteorologyClimate,
            ),
            Fake(
                "burned_area",
                "Burned area from dNBR thresholds.",
                ToolFamily::FireGeophysics,
            ),
            Fake(
                "population_in_polygon",
                "Population exposure inside a flood polygon.",
                ToolFamily::VectorExposure,
            ),
        ] {
            r.register(Arc::new(t)).unwrap();
        }
        r
    }

    #[test]
    fn top_k_ranks_by_task_and_keeps_research_tools() {
        let r = registry();
        let plan = CataloguePlan {
            condition: CatalogueCondition::TopK { k: 1 },
            ..Default::default()
        };
        let c = present(
            &r,
            &plan,
            "What was the heat index given temperature and humidity?",
            &Bm25Router::default(),
        );
        assert_eq!(c.tools.len(), 7);
        assert_eq!(c.tools[6].registry_name, "heat_index");
        assert_eq!(&c.names()[..6], &RESEARCH_TOOL_NAMES);
    }

    #[test]
    fn fixed_subsets_are_nested_and_opaque_names_route_back() {
        let r = registry();
        let small = present(
            &r,
            &CataloguePlan {
                condition: CatalogueCondition::Fixed { size: 6 },
                ..Default::default()
            },
            "",
            &Bm25Router::default(),
        );
        let big = present(
            &r,
            &CataloguePlan {
                condition: CatalogueCondition::Fixed { size: 8 },
                ..Default::default()
            },
            "",
            &Bm25Router::default(),
        );
        assert_eq!(small.names(), big.names()[..6].to_vec());
        let opaque = present(
            &r,
            &CataloguePlan {
                naming: Naming::Opaque,
                ..Default::default()
            },
            "",
            &Bm25Router::default(),
        );
        let shown = opaque.tools[7].shown_name.clone();
        assert!(shown.starts_with("tool_008_"));
        assert_eq!(
            opaque.resolve(&shown),
            Some(opaque.tools[7].registry_name.as_str())
        );
    }

    #[test]
    fn workflow_and_hierarchy() {
        let r = registry();
        let plan = CataloguePlan {
            condition: CatalogueCondition::WorkflowProfile,
            ..Default::default()
        };
        let c = present(&r, &plan, "wildfire burn severity", &Bm25Router::default());
        assert!(c.resolve("burned_area").is_some() && c.resolve("heat_index").is_none());
        let h = hierarchical(&r, &CataloguePlan::default());
        assert_eq!(h.base.tools.len(), 6);
        assert_eq!(h.domains.len(), 4);
        assert_eq!(h.expand("time_series").map(|t| t.len()), Some(1));
    }
}
