//! The narrow tool-side seam of the controller.
//!
//! The controller needs four things from the tools: their definitions (for
//! the catalogue and native tool calling), whether a tool counts as a
//! specialist for the required-tool policy, and a way to call one by name.
//! [`ToolBox`] is that seam; `earthverse_tool_registry::Registry` implements
//! it, and an embedding application may implement it over its own tools.

use async_trait::async_trait;
use earthverse_model_provider::ToolDefinition;
use earthverse_tool_registry::{ToolContext, ToolOutput};
use serde_json::Value;

/// What the controller needs from a set of tools.
#[async_trait]
pub trait ToolBox: Send + Sync {
    /// Definitions of the tools offered to the model.
    fn definitions(&self) -> Vec<ToolDefinition>;

    /// `<<REGISTERED_TOOL_CATALOGUE>>` of the task message. The default lists
    /// each tool with its description and argument schema.
    fn catalogue(&self) -> String {
        render_catalogue(&self.definitions())
    }

    /// Whether calls of `tool` count for the required-tool policy (App. A.4).
    fn is_specialist(&self, _tool: &str) -> bool {
        false
    }

    /// Calls `tool` with `args`. Unknown tools and bad arguments come back as
    /// an execution-error envelope, never as a panic.
    async fn call(&self, ctx: &ToolContext, tool: &str, args: Value) -> ToolCallOutcome;

    /// A per-run view of the tools for a catalogue condition (Tables 4b,
    /// 6a–b): which tools the run is offered, under which names, and how
    /// that changes during the run. `package_files` are the package-relative
    /// paths of the task's package: conditions routed on task *and package*
    /// cues (the cue-routed meteorology of App. A.3.4) read them. `None`
    /// (the default) offers every tool of [`ToolBox::definitions`] under its
    /// own name for the whole run.
    fn open_session(
        &self,
        _task_text: &str,
        _package_files: &[String],
    ) -> Option<Box<dyn CatalogueSession>> {
        None
    }

    /// Renders a JSON value for observations and records. The default is
    /// serde_json's two-space pretty form; the registry renders exactly as
    /// the reference runner's Python `json.dumps(indent=2)` did.
    fn render_json(&self, value: &Value) -> String {
        serde_json::to_string_pretty(value).unwrap_or_default()
    }
}

/// Renders a tool's `output` for `trajectory.json` (`output.text`):
/// strings as they are, anything else through the tool box's
/// [`ToolBox::render_json`].
pub fn render_output_text(tools: &(impl ToolBox + ?Sized), output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        other => tools.render_json(other),
    }
}

/// The tool registry is a tool box: its definitions, its reference JSON
/// rendering, and every non-research tool counts as a specialist (App. A.4).
#[async_trait]
impl ToolBox for earthverse_tool_registry::Registry {
    fn definitions(&self) -> Vec<ToolDefinition> {
        earthverse_tool_registry::Registry::definitions(self)
            .into_iter()
            .map(|d| ToolDefinition {
                name: d.name,
                description: d.description,
                parameters: d.parameters_schema,
            })
            .collect()
    }

    fn is_specialist(&self, tool: &str) -> bool {
        self.get(tool)
            .is_some_and(|t| t.family() != earthverse_tool_registry::ToolFamily::Research)
    }

    async fn call(&self, ctx: &ToolContext, tool: &str, args: Value) -> ToolCallOutcome {
        let record = earthverse_tool_registry::Registry::call(self, ctx, tool, args).await;
        ToolCallOutcome::new(record.args, record.envelope)
    }

    fn render_json(&self, value: &Value) -> String {
        earthverse_tool_registry::render::to_python_json_pretty(value)
    }
}

/// The per-run catalogue of a catalogue condition: the controller's
/// per-step hook. The controller shows [`CatalogueSession::catalogue`] in
/// the task message, offers [`CatalogueSession::definitions`] for native
/// tool calling, resolves every called name through
/// [`CatalogueSession::resolve`] (records keep the real tool name), and
/// after each observation asks [`CatalogueSession::after_observation`]
/// whether the offer changed (dynamic and hierarchical catalogues).
pub trait CatalogueSession: Send {
    /// `<<REGISTERED_TOOL_CATALOGUE>>` of the task message.
    fn catalogue(&self) -> String;
    /// The tools offered now, under their shown names.
    fn definitions(&self) -> Vec<ToolDefinition>;
    /// What a called (shown) name means.
    fn resolve(&mut self, shown: &str, args: &Value) -> Resolution;
    /// Called after each observation with its text; `Some(message)` when
    /// the offer changed, the message telling the model the new offer.
    fn after_observation(&mut self, observation: &str) -> Option<String>;
    /// The registry names offered now, in presentation order.
    fn offered(&self) -> Vec<String>;
}

/// What a called name means in a [`CatalogueSession`].
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// Call this (real) tool.
    Call(String),
    /// A catalogue action (e.g. opening a domain): record it under this
    /// name with this output, call no tool.
    Answer {
        /// The name the call is recorded under.
        tool: String,
        /// The observation's output.
        output: Value,
    },
    /// The name is not offered; the message says so.
    Refuse(String),
}

/// What one call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallOutcome {
    /// The arguments as the tool ran them (defaults filled, variants
    /// normalised); recorded in `trajectory.json`.
    pub args: Value,
    /// The envelope `{ok, output, evidence_files, warnings}` and status.
    pub envelope: ToolOutput,
}

impl ToolCallOutcome {
    /// An outcome whose arguments are recorded as given.
    pub fn new(args: Value, envelope: ToolOutput) -> Self {
        Self { args, envelope }
    }
}

/// Renders a catalogue: one entry per tool with name, description and the
/// JSON Schema of its arguments.
pub fn render_catalogue(definitions: &[ToolDefinition]) -> String {
    let mut out = String::new();
    for def in definitions {
        out.push_str(&format!(
            "- {}: {}\n  arguments schema: {}\n",
            def.name, def.description, def.parameters
        ));
    }
    out
}
