//! The catalogue: 170 operations, unique names, eight families, schemas
//! that compile, descriptions present (paper §3.4).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_domain_ops::{all_operations, operation_list};
use earthverse_tool_registry::ToolFamily;
use std::collections::{BTreeMap, BTreeSet};

#[test]
fn there_are_170_uniquely_named_operations_in_eight_families() {
    let ops = all_operations();
    let names: BTreeSet<String> = ops.iter().map(|t| t.name().to_string()).collect();
    let mut by_family: BTreeMap<String, usize> = BTreeMap::new();
    for t in &ops {
        *by_family.entry(format!("{:?}", t.family())).or_default() += 1;
        assert_ne!(
            t.family(),
            ToolFamily::Research,
            "{} is a domain operation",
            t.name()
        );
        assert!(
            t.description().len() >= 30,
            "{} needs a real description",
            t.name()
        );
    }
    eprintln!("{by_family:?}");
    assert_eq!(names.len(), ops.len(), "duplicate operation names");
    assert_eq!(ops.len(), 170);
    assert_eq!(by_family.len(), 8, "{by_family:?}");
}

#[test]
fn every_schema_compiles_and_accepts_its_defaults() {
    for op in operation_list() {
        let schema = earthverse_tool_registry::Tool::parameters_schema(&op);
        let validator = jsonschema::validator_for(&schema)
            .unwrap_or_else(|e| panic!("{}: schema does not compile: {e}", op.name));
        // an empty call is invalid exactly when something is required
        let required = schema["required"].as_array().map(Vec::len).unwrap_or(0);
        let empty = serde_json::json!({});
        assert_eq!(validator.is_valid(&empty), required == 0, "{}", op.name);
        // unknown arguments are refused
        let unknown = serde_json::json!({"definitely_not_an_argument": 1});
        assert!(
            !validator.is_valid(&unknown),
            "{} accepts unknown arguments",
            op.name
        );
    }
}
