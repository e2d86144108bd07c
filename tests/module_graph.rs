//! No import circles inside any crate (issue 47): within each crate under
//! `crates/`, the modules (one a file) must not import each other directly
//! or in a loop. Shared helpers live in leaf modules and plain data types
//! outside behaviour modules, so a module can be read, tested and moved
//! without the others.
//!
//! Each file is parsed with `syn`; its edges are the `crate::`, `super::`
//! and `self::` paths of its `use` items and expressions (test modules,
//! `#[cfg(test)]`, left out), resolved to the longest module they name.
//! Edges into or out of the crate root (`lib.rs`, whose `pub use` lines
//! re-export) and from a module to its own submodules (declaration and
//! re-export plumbing) are not imports in this sense. A cycle is a
//! strongly connected component of more than one module.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

type Module = Vec<String>;

fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs").to_string();
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem);
    }
    parts
}

#[derive(Default)]
struct Paths {
    found: Vec<Vec<String>>,
}

fn is_test_item(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().contains("test"))
    })
}

fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push(path);
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push(path);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_item(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_item(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if !is_test_item(&u.attrs) {
            use_paths(&u.tree, &mut Vec::new(), &mut self.found);
        }
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.found
            .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
}

/// The module a path names, seen from `from`, if it is inside the crate.
fn target(
    from: &Module,
    path: &[String],
    modules: &BTreeSet<Module>,
    is_dir_mod: bool,
) -> Option<Module> {
    let first = path.first()?;
    let mut base: Module = match first.as_str() {
        "crate" => Vec::new(),
        // `super` of a file `a/b.rs` is `a`; of `a/b/mod.rs` also `a`.
        "super" => {
            let mut m = from.clone();
            m.pop()?;
            m
        }
        "self" => from.clone(),
        _ => return None,
    };
    let _ = is_dir_mod;
    let mut best = base.clone();
    for seg in &path[1..] {
        if seg == "super" {
            base.pop();
            best = base.clone();
            continue;
        }
        base.push(seg.clone());
        if modules.contains(&base) {
            best = base.clone();
        } else {
            break;
        }
    }
    Some(best)
}

fn crate_graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let files: Vec<PathBuf> = walkdir::WalkDir::new(src)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(src, f)).collect();
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for file in &files {
        let from = module_of(src, file);
        let text = std::fs::read_to_string(file).unwrap();
        let Ok(ast) = syn::parse_file(&text) else {
            panic!("{} does not parse", file.display());
        };
        let mut paths = Paths::default();
        paths.visit_file(&ast);
        let is_dir_mod = file.file_name().is_some_and(|n| n == "mod.rs");
        for path in paths.found {
            let Some(to) = target(&from, &path, &modules, is_dir_mod) else {
                continue;
            };
            // The root re-exports; a module's own submodules are plumbing.
            if to.is_empty() || from.is_empty() || to == from || to.starts_with(&from) {
                continue;
            }
            graph.entry(from.clone()).or_default().insert(to);
        }
    }
    graph
}

/// Strongly connected components of more than one node (Tarjan).
fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'g> {
        graph: &'g BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'g Module, usize>,
        low: BTreeMap<&'g Module, usize>,
        stack: Vec<&'g Module>,
        on_stack: BTreeSet<&'g Module>,
        next: usize,
        out: Vec<Vec<Module>>,
    }
    fn strong<'g>(s: &mut State<'g>, v: &'g Module) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(edges) = s.graph.get(v) {
            for w in edges {
                // Only nodes that are keys have outgoing edges; others are leaves.
                let w: &'g Module = s.graph.get_key_value(w).map_or(w, |(k, _)| k);
                if !s.index.contains_key(w) {
                    strong(s, w);
                    let lw = s.low[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(lw));
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(iw));
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            strong(&mut s, v);
        }
    }
    s.out
}

fn show(m: &Module) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

#[test]
fn the_checker_finds_a_planted_circle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("shapes")).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "mod a; mod b; mod shapes; pub use a::A;",
    )
    .unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::helper; pub struct A;").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub fn helper() -> crate::shapes::circle::Circle { todo!() }",
    )
    .unwrap();
    std::fs::write(
        src.join("shapes/mod.rs"),
        "pub mod circle; pub use circle::Circle;",
    )
    .unwrap();
    std::fs::write(
        src.join("shapes/circle.rs"),
        "pub struct Circle; fn f(_: super::super::a::A) {} #[cfg(test)] mod tests { use crate::b::helper; }",
    )
    .unwrap();
    let graph = crate_graph(src);
    let found = cycles(&graph);
    let shown: Vec<Vec<String>> = found.iter().map(|c| c.iter().map(show).collect()).collect();
    assert_eq!(
        shown,
        vec![vec!["a".to_string(), "b".into(), "shapes::circle".into()]],
        "{graph:?}"
    );
    // Without the back edge the loop is gone.
    std::fs::write(src.join("shapes/circle.rs"), "pub struct Circle;").unwrap();
    assert!(cycles(&crate_graph(src)).is_empty());
}

#[test]
fn no_crate_has_an_import_circle() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
    let mut report = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path().join("src")))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for src in dirs {
        let graph = crate_graph(&src);
        for component in cycles(&graph) {
            let name = src.parent().unwrap().file_name().unwrap().to_string_lossy();
            let modules: Vec<String> = component.iter().map(show).collect();
            // The edges inside the loop, to say which import to move.
            let inside: BTreeSet<&Module> = component.iter().collect();
            let edges: Vec<String> = component
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .iter()
                        .filter(|to| inside.contains(to))
                        .map(move |to| format!("{} -> {}", show(from), show(to)))
                })
                .collect();
            report.push(format!(
                "{name}: {} ({})",
                modules.join(" <-> "),
                edges.join(", ")
            ));
        }
    }
    assert!(report.is_empty(), "import circles:\n{}", report.join("\n"));
}
