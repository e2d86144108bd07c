//! Provider specs as a person writes them (`openai:MODEL`,
//! `anthropic:MODEL`): the one parser and builder behind every command and
//! harness that picks a wire model by name. Adding a provider is one arm
//! here.

use crate::{
    AnthropicConfig, AnthropicMessages, ChatModel, OpenAiCompatible, OpenAiConfig, ProviderError,
    Result,
};
use std::sync::Arc;

/// A wire provider this crate speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// OpenAI-compatible `/chat/completions` ([`OpenAiCompatible`]).
    OpenAi,
    /// Anthropic Messages ([`AnthropicMessages`]).
    Anthropic,
}

impl Provider {
    /// Every provider, in the order help texts list them.
    pub const ALL: [Provider; 2] = [Provider::OpenAi, Provider::Anthropic];

    /// The spec prefix (`openai`, `anthropic`).
    pub fn prefix(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
}

/// Where a provider is reached: both fields default to the provider's own
/// (its public endpoint and key variable, e.g. `OPENAI_API_KEY`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Endpoint {
    /// Base URL of the model endpoint (OpenAI-compatible: up to `/v1`;
    /// Anthropic: without `/v1`). With it, no API key is sent unless
    /// `--api-key-env` names one.
    #[cfg_attr(feature = "clap", arg(long))]
    pub base_url: Option<String>,
    /// Environment variable holding the endpoint's API key.
    #[cfg_attr(feature = "clap", arg(long))]
    pub api_key_env: Option<String>,
}

/// A parsed `PROVIDER:MODEL` spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderSpec {
    /// The provider.
    pub provider: Provider,
    /// The model name as the provider knows it.
    pub model: String,
}

impl ProviderSpec {
    /// Parses `openai:MODEL` or `anthropic:MODEL`. `Ok(None)` for a spec
    /// whose prefix is no provider (a caller may know other agent kinds,
    /// such as `baseline`); an error names the spec when the prefix is a
    /// provider but the model name is empty.
    pub fn parse(spec: &str) -> Result<Option<Self>> {
        let (prefix, model) = spec.split_once(':').unwrap_or((spec, ""));
        let Some(provider) = Provider::ALL.into_iter().find(|p| p.prefix() == prefix) else {
            return Ok(None);
        };
        if model.is_empty() {
            return Err(ProviderError::Config(format!(
                "`{spec}`: the model name after `{prefix}:` is empty"
            )));
        }
        Ok(Some(Self {
            provider,
            model: model.to_string(),
        }))
    }

    /// Like [`ProviderSpec::parse`], but a spec that names no provider is an
    /// error listing the known ones.
    pub fn parse_required(spec: &str) -> Result<Self> {
        Self::parse(spec)?.ok_or_else(|| {
            let known: Vec<String> = Provider::ALL
                .iter()
                .map(|p| format!("{}:MODEL", p.prefix()))
                .collect();
            ProviderError::Config(format!("`{spec}`: expected one of {}", known.join(", ")))
        })
    }

    /// A file-name-safe label, `PROVIDER-MODEL` (e.g. `openai-gpt-5`).
    pub fn slug(&self) -> String {
        format!("{}-{}", self.provider.prefix(), self.model)
    }

    /// Builds the model. Reads the API key variable now, so a missing key is
    /// reported before any run starts.
    pub fn build(&self, endpoint: &Endpoint) -> Result<Arc<dyn ChatModel>> {
        Ok(match self.provider {
            Provider::OpenAi => {
                let mut config = match &endpoint.base_url {
                    Some(url) => OpenAiConfig::local(self.model.as_str(), url.clone()),
                    None => OpenAiConfig::openai(self.model.as_str()),
                };
                if let Some(var) = &endpoint.api_key_env {
                    config.api_key_env = Some(var.clone());
                }
                Arc::new(OpenAiCompatible::new(config)?)
            }
            Provider::Anthropic => {
                let mut config = AnthropicConfig::anthropic(self.model.as_str());
                if let Some(url) = &endpoint.base_url {
                    config.base_url = url.clone();
                    config.api_key_env = None;
                }
                if let Some(var) = &endpoint.api_key_env {
                    config.api_key_env = Some(var.clone());
                }
                Arc::new(AnthropicMessages::new(config)?)
            }
        })
    }
}

/// Parses a `PROVIDER:MODEL` spec and builds its model in one step.
pub fn from_spec(spec: &str, endpoint: &Endpoint) -> Result<Arc<dyn ChatModel>> {
    ProviderSpec::parse_required(spec)?.build(endpoint)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn specs_parse_into_provider_and_model() {
        let spec = ProviderSpec::parse("anthropic:claude-x:latest")
            .unwrap()
            .unwrap();
        assert_eq!(spec.provider, Provider::Anthropic);
        assert_eq!(spec.model, "claude-x:latest");
        assert_eq!(spec.slug(), "anthropic-claude-x:latest");
        assert!(ProviderSpec::parse("baseline").unwrap().is_none());
        assert!(ProviderSpec::parse("replay:dir").unwrap().is_none());
        let empty = ProviderSpec::parse("openai:").unwrap_err().to_string();
        assert!(
            empty.contains("`openai:`") && empty.contains("empty"),
            "{empty}"
        );
        let unknown = ProviderSpec::parse_required("mistral:x")
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("mistral:x") && unknown.contains("anthropic:MODEL"));
    }

    #[test]
    fn a_local_endpoint_builds_without_a_key_and_ids_the_model() {
        let endpoint = Endpoint {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key_env: None,
        };
        let model = from_spec("openai:local-model", &endpoint).unwrap();
        assert_eq!(model.model_id(), "openai:local-model");
        let missing = Endpoint {
            base_url: Some("http://127.0.0.1:9".into()),
            api_key_env: Some("EARTHVERSE_TEST_UNSET_KEY_VARIABLE".into()),
        };
        let err = match from_spec("anthropic:m", &missing) {
            Ok(_) => panic!("a missing key variable was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("EARTHVERSE_TEST_UNSET_KEY_VARIABLE"), "{err}");
    }
}
