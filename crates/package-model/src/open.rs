//! Opening a release root of either layout: the authoring layout
//! ([`crate::authoring`]) or the release layout ([`crate::release`]). A
//! leaf over both, so neither imports the other's loader.

use crate::error::Result;
use crate::release::Release;

impl Release {
    /// Loads a release from `root` (a directory holding `tasks/`). Task
    /// files that fail to parse are recorded in [`Release::load_errors`];
    /// only a missing or unreadable `tasks/` directory is an error.
    ///
    /// A root in the authoring layout (see [`crate::authoring`]) is
    /// recognised and loaded with [`crate::authoring::load_authoring`]
    /// (the dispatch lives here, in `open.rs`, so `release.rs` does not
    /// import the authoring layer that builds on it).
    pub fn load(root: &std::path::Path) -> Result<Release> {
        if crate::authoring::is_authoring_layout(root) {
            return crate::authoring::load_authoring(root);
        }
        Release::load_release_layout(root)
    }
}
