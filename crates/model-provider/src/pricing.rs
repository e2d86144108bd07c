//! Prices for cost accounting: USD per million prompt, completion and cached
//! prompt tokens, per model id. No prices are built in (they change); load a
//! table from JSON: `{"gpt-4o": {"prompt": 2.5, "completion": 10, "cached": 1.25}}`.

use crate::chat::TokenUsage;
use crate::error::ProviderError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// USD per million tokens of one model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Uncached prompt tokens.
    pub prompt: f64,
    /// Completion tokens.
    pub completion: f64,
    /// Cached prompt tokens (defaults to the prompt price).
    #[serde(default)]
    pub cached: Option<f64>,
}

/// A price table keyed by model id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Pricing {
    /// Prices by model id.
    pub models: BTreeMap<String, ModelPrice>,
}

impl Pricing {
    /// Parses a JSON table.
    pub fn from_json(text: &str) -> crate::Result<Self> {
        let pricing: Self = serde_json::from_str(text)
            .map_err(|e| ProviderError::Config(format!("price table: {e}")))?;
        for (model, price) in &pricing.models {
            let all = [Some(price.prompt), Some(price.completion), price.cached];
            if all.iter().flatten().any(|p| !p.is_finite() || *p < 0.0) {
                return Err(ProviderError::Config(format!(
                    "price table: model `{model}` has a negative or non-finite price"
                )));
            }
        }
        Ok(pricing)
    }

    /// Reads a JSON table from a file.
    pub fn from_path(path: &Path) -> crate::Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ProviderError::Config(format!("reading {}: {e}", path.display())))?;
        Self::from_json(&text)
            .map_err(|e| ProviderError::Config(format!("{}: {e}", path.display())))
    }

    /// The price of a model: exact id first, then the id without its
    /// provider prefix (`openai:gpt-4o` -> `gpt-4o`).
    pub fn price(&self, model_id: &str) -> Option<&ModelPrice> {
        self.models.get(model_id).or_else(|| {
            model_id
                .split_once(':')
                .and_then(|(_, bare)| self.models.get(bare))
        })
    }

    /// Cost in USD of `usage` on `model_id`, or `None` when the model has no price.
    /// Cached tokens are part of the prompt tokens and billed at the cached price.
    pub fn cost(&self, model_id: &str, usage: &TokenUsage) -> Option<f64> {
        let price = self.price(model_id)?;
        let cached = usage.cached_tokens.min(usage.prompt_tokens);
        let uncached = usage.prompt_tokens - cached;
        let per = 1.0e-6;
        Some(
            uncached as f64 * price.prompt * per
                + cached as f64 * price.cached.unwrap_or(price.prompt) * per
                + usage.completion_tokens as f64 * price.completion * per,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_bills_cached_tokens_at_the_cached_price() {
        let table =
            Pricing::from_json(r#"{"gpt-4o": {"prompt": 2.5, "completion": 10, "cached": 1.25}}"#)
                .unwrap_or_default();
        let usage = TokenUsage {
            prompt_tokens: 1_000_000,
            completion_tokens: 100_000,
            cached_tokens: 400_000,
        };
        let cost = table.cost("openai:gpt-4o", &usage).unwrap_or(f64::NAN);
        assert!(
            (cost - (0.6 * 2.5 + 0.4 * 1.25 + 0.1 * 10.0)).abs() < 1e-9,
            "{cost}"
        );
        assert_eq!(table.cost("other", &usage), None);
        assert!(Pricing::from_json(r#"{"m": {"prompt": -1, "completion": 1}}"#).is_err());
    }
}
