//! # earthverse-domain-ops
//!
//! The paper's registry of 170 reusable domain operations (§3.4, Appendix
//! A.4, D.6) in eight families, each behind the tool-registry `Tool` trait
//! with a JSON Schema, an applicability check and units/provenance on output.
#![deny(missing_docs)]
