//! # earthverse-package-model
//!
//! The data model of the EarthVerse benchmark (paper §3.3, Appendix C.7, E):
//! tasks, ground truth, rubrics, events, file inventories, recorded runs,
//! loaders for the public release and the authoring layout, release
//! validation, content sniffing, text extraction and **safe evidence access**
//! (the only way any other crate turns a model-supplied path into a file).
//!
//! Depends on no other earthverse crate.
#![deny(missing_docs)]
