//! Catalogue conditions over the tool registry (paper App. A.2, A.3.2;
//! Tables 4b and 6a–b): a [`ToolBox`] that offers each run the tools of a
//! [`CataloguePlan`] — a nested fixed subset, a Top-k or workflow route for
//! the task, the expert or general+expert suite, domains first
//! (hierarchical), candidates re-routed at every step (dynamic), the
//! compact or cue-routed meteorology access of App. A.3.4 — under
//! reference, descriptive or opaque names. Calls are routed back to the
//! real tools and records keep the real names.

use crate::toolbox::{render_catalogue, CatalogueSession, Resolution, ToolBox, ToolCallOutcome};
use async_trait::async_trait;
use earthverse_model_provider::ToolDefinition;
use earthverse_tool_registry::catalogue::{
    hierarchical, ordered_descriptors, package_cues, present_from, Bm25Router, CatalogueCondition,
    CataloguePlan, HierarchicalCatalogue, Naming, PresentedCatalogue, PresentedTool, ToolRouter,
};
use earthverse_tool_registry::ToolDescriptor;
use earthverse_tool_registry::{Registry, ToolContext};
use serde_json::{json, Value};
use std::sync::Arc;

/// The catalogue action of the hierarchical condition: opening a domain
/// shows its tools and makes them callable.
pub const OPEN_DOMAIN_TOOL: &str = "open_tool_domain";

/// The registry seen through a catalogue plan.
pub struct PresentedToolBox {
    registry: Arc<Registry>,
    /// The registry's tools in catalogue order, built once.
    ordered: Arc<Vec<ToolDescriptor>>,
    plan: CataloguePlan,
    router: Arc<dyn ToolRouter>,
}

impl std::fmt::Debug for PresentedToolBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PresentedToolBox")
            .field("plan", &self.plan)
            .field("router", &self.router.name())
            .finish()
    }
}

impl PresentedToolBox {
    /// `registry` under `plan`, routed by BM25 over tool descriptions.
    pub fn new(registry: Arc<Registry>, plan: CataloguePlan) -> Self {
        Self::with_router(registry, plan, Arc::new(Bm25Router::default()))
    }

    /// `registry` under `plan`, routed by `router` (e.g. an embedding
    /// router behind [`ToolRouter`]).
    pub fn with_router(
        registry: Arc<Registry>,
        plan: CataloguePlan,
        router: Arc<dyn ToolRouter>,
    ) -> Self {
        Self {
            ordered: Arc::new(ordered_descriptors(&registry)),
            registry,
            plan,
            router,
        }
    }

    /// The plan.
    pub fn plan(&self) -> &CataloguePlan {
        &self.plan
    }

    /// The session of one run on `task_text`.
    pub fn session(&self, task_text: &str) -> PresentedSession {
        self.session_with_package(task_text, &[])
    }

    /// The session of one run on `task_text` over a package holding
    /// `package_files`: the cue-routed meteorology condition routes on the
    /// task text and the package's file paths ([`package_cues`]); every
    /// other condition on the task text alone.
    pub fn session_with_package(
        &self,
        task_text: &str,
        package_files: &[String],
    ) -> PresentedSession {
        let hierarchy = (self.plan.condition == CatalogueCondition::Hierarchical)
            .then(|| hierarchical(&self.registry, &self.plan));
        let routed_on = match self.plan.condition {
            CatalogueCondition::CueRoutedMeteorology { .. } => {
                format!("{task_text}\n{}", package_cues(package_files))
            }
            _ => task_text.to_string(),
        };
        let current = match &hierarchy {
            Some(h) => h.base.clone(),
            None => present_from(&self.ordered, &self.plan, &routed_on, self.router.as_ref()),
        };
        PresentedSession {
            ordered: self.ordered.clone(),
            router: self.router.clone(),
            plan: self.plan.clone(),
            task_text: task_text.to_string(),
            current,
            hierarchy,
            opened: Vec::new(),
        }
    }
}

#[async_trait]
impl ToolBox for PresentedToolBox {
    fn definitions(&self) -> Vec<ToolDefinition> {
        self.session("").definitions()
    }

    fn catalogue(&self) -> String {
        self.session("").catalogue()
    }

    fn is_specialist(&self, tool: &str) -> bool {
        ToolBox::is_specialist(self.registry.as_ref(), tool)
    }

    async fn call(&self, ctx: &ToolContext, tool: &str, args: Value) -> ToolCallOutcome {
        ToolBox::call(self.registry.as_ref(), ctx, tool, args).await
    }

    fn open_session(
        &self,
        task_text: &str,
        package_files: &[String],
    ) -> Option<Box<dyn CatalogueSession>> {
        Some(Box::new(
            self.session_with_package(task_text, package_files),
        ))
    }

    fn render_json(&self, value: &Value) -> String {
        ToolBox::render_json(self.registry.as_ref(), value)
    }
}

/// One run's view: the tools offered now and the domains opened.
pub struct PresentedSession {
    ordered: Arc<Vec<ToolDescriptor>>,
    router: Arc<dyn ToolRouter>,
    plan: CataloguePlan,
    task_text: String,
    current: PresentedCatalogue,
    hierarchy: Option<HierarchicalCatalogue>,
    opened: Vec<String>,
}

impl std::fmt::Debug for PresentedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PresentedSession")
            .field("plan", &self.plan)
            .field("offered", &self.offered())
            .finish()
    }
}

fn definition(tool: &PresentedTool) -> ToolDefinition {
    ToolDefinition {
        name: tool.shown_name.clone(),
        description: tool.description.clone(),
        parameters: tool.parameters_schema.clone(),
    }
}

impl PresentedSession {
    /// Every tool callable now: the current catalogue and opened domains.
    fn callable(&self) -> impl Iterator<Item = &PresentedTool> {
        let opened = self.hierarchy.iter().flat_map(|h| {
            self.opened
                .iter()
                .filter_map(|d| h.expand(d))
                .flat_map(|tools| tools.iter())
        });
        self.current.tools.iter().chain(opened)
    }

    fn open_domain_definition(h: &HierarchicalCatalogue) -> ToolDefinition {
        let names: Vec<String> = h
            .domains
            .iter()
            .map(|d| {
                format!(
                    "{} ({} tools, e.g. {})",
                    d.family.as_str(),
                    d.tool_count,
                    d.examples.join(", ")
                )
            })
            .collect();
        ToolDefinition {
            name: OPEN_DOMAIN_TOOL.into(),
            description: format!(
                "Show the tools of one domain and make them callable. Domains: {}.",
                names.join("; ")
            ),
            parameters: json!({
                "type": "object",
                "properties": {"domain": {"type": "string",
                    "enum": h.domains.iter().map(|d| d.family.as_str()).collect::<Vec<_>>()}},
                "required": ["domain"]
            }),
        }
    }
}

impl CatalogueSession for PresentedSession {
    fn catalogue(&self) -> String {
        render_catalogue(&self.definitions())
    }

    fn definitions(&self) -> Vec<ToolDefinition> {
        let mut defs: Vec<ToolDefinition> = self.callable().map(definition).collect();
        if let Some(h) = &self.hierarchy {
            defs.push(Self::open_domain_definition(h));
        }
        defs
    }

    fn resolve(&mut self, shown: &str, args: &Value) -> Resolution {
        if let Some(h) = &self.hierarchy {
            if shown == OPEN_DOMAIN_TOOL {
                let domain = args.get("domain").and_then(Value::as_str).unwrap_or("");
                let Some(tools) = h.expand(domain) else {
                    return Resolution::Refuse(format!(
                        "{OPEN_DOMAIN_TOOL}: unknown domain `{domain}`"
                    ));
                };
                let output = json!({
                    "domain": domain,
                    "tools": tools.iter().map(|t| json!({
                        "name": t.shown_name, "description": t.description,
                        "arguments": t.parameters_schema})).collect::<Vec<_>>(),
                });
                if !self.opened.iter().any(|d| d == domain) {
                    self.opened.push(domain.to_string());
                }
                return Resolution::Answer {
                    tool: OPEN_DOMAIN_TOOL.into(),
                    output,
                };
            }
        }
        // Under opaque names only the shown names exist for the model; the
        // other namings also accept the real name of an offered tool.
        let opaque = self.plan.naming == Naming::Opaque;
        let found = self.callable().find(|t| t.shown_name == shown).or_else(|| {
            (!opaque)
                .then(|| self.callable().find(|t| t.registry_name == shown))
                .flatten()
        });
        match found {
            Some(t) => Resolution::Call(t.registry_name.clone()),
            None => Resolution::Refuse(format!(
                "tool `{shown}` is not offered in this run's catalogue"
            )),
        }
    }

    fn after_observation(&mut self, observation: &str) -> Option<String> {
        if !self.plan.dynamic_descriptions {
            return None;
        }
        let query = format!("{} {}", self.task_text, observation);
        let next = present_from(&self.ordered, &self.plan, &query, self.router.as_ref());
        if next.names() == self.current.names() {
            return None;
        }
        self.current = next;
        Some(format!(
            "Tool candidates for the next step (retrieved again from the task and the last \
             observation; earlier candidates are no longer callable):\n{}",
            self.catalogue()
        ))
    }

    fn offered(&self) -> Vec<String> {
        self.callable().map(|t| t.registry_name.clone()).collect()
    }
}
