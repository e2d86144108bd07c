//! The reference analysis' files of a task.

/// The files of a task's reference analysis: the inventory paths
/// (package-relative, `data/...`) that the reference texts (the expert
/// solution, `compute_gt.py`) name, by their full package-relative path
/// or, when that name is unique in the inventory and at least 12
/// characters long, by their file name alone. In inventory order.
///
/// ```
/// use earthverse_evidence_ledger::reference_files;
/// let inventory = ["data/a/open_meteo_archive.json", "data/b/era5_stats.json"];
/// let solution = "Read `data/a/open_meteo_archive.json`, not the aggregate.";
/// assert_eq!(reference_files(&[solution], &inventory), ["data/a/open_meteo_archive.json"]);
/// ```
pub fn reference_files(texts: &[&str], inventory: &[&str]) -> Vec<String> {
    let name_of = |p: &str| p.rsplit('/').next().unwrap_or(p).to_owned();
    let names: Vec<String> = inventory.iter().map(|p| name_of(p)).collect();
    // How many inventory files share each name (one map, not a scan of
    // every name per file).
    let mut counts: std::collections::HashMap<&str, usize> =
        std::collections::HashMap::with_capacity(names.len());
    for name in &names {
        *counts.entry(name.as_str()).or_default() += 1;
    }
    inventory
        .iter()
        .zip(&names)
        .filter(|(path, name)| {
            let unique = counts.get(name.as_str()) == Some(&1);
            texts.iter().any(|t| {
                t.contains(**path) || (unique && name.len() >= 12 && t.contains(name.as_str()))
            })
        })
        .map(|(path, _)| (*path).to_owned())
        .collect()
}
