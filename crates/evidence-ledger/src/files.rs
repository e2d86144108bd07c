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
    // memchr's SIMD substring search: the same bytes as `str::contains`, a
    // fraction of its time on these long texts. One searcher per needle,
    // built once and reused across the texts.
    inventory
        .iter()
        .zip(&names)
        .filter(|(path, name)| {
            let unique = counts.get(name.as_str()) == Some(&1);
            let by_path = memchr::memmem::Finder::new(path.as_bytes());
            let by_name =
                (unique && name.len() >= 12).then(|| memchr::memmem::Finder::new(name.as_bytes()));
            texts.iter().any(|t| {
                by_path.find(t.as_bytes()).is_some()
                    || by_name
                        .as_ref()
                        .is_some_and(|f| f.find(t.as_bytes()).is_some())
            })
        })
        .map(|(path, _)| (*path).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::reference_files;
    use proptest::prelude::*;

    /// The rule as written, with `str::contains`.
    fn by_contains(texts: &[&str], inventory: &[&str]) -> Vec<String> {
        let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_owned();
        inventory
            .iter()
            .filter(|path| {
                let n = name(path);
                let unique = inventory.iter().filter(|q| name(q) == n).count() == 1;
                texts
                    .iter()
                    .any(|t| t.contains(**path) || (unique && n.len() >= 12 && t.contains(&n)))
            })
            .map(|p| (*p).to_owned())
            .collect()
    }

    proptest! {
        /// Paths drawn from a few folders and names (so that names repeat,
        /// nest in one another and reach the 12-character bound), texts
        /// pieced from the same parts: the memchr search selects exactly
        /// what `str::contains` selects.
        #[test]
        fn memmem_search_equals_contains(
            inventory in prop::collection::vec(
                (prop::sample::select(vec!["data/", "data/a/", "data/a/b/", "", "x/"]),
                 prop::sample::select(vec!["era5.json", "era5_stats.json", "stats.json",
                     "open_meteo_archive.json", "archive.json", "é_station_daily.csv", "a", ""])),
                0..12),
            pieces in prop::collection::vec(
                prop::sample::select(vec!["data/", "a/", "b/", "era5", "_stats", ".json",
                    "stats.json", "open_meteo_", "archive.json", " ", "é_station_daily.csv", "x/"]),
                0..24),
            split in 0usize..24,
        ) {
            let inventory: Vec<String> = inventory.into_iter().map(|(d, n)| format!("{d}{n}")).collect();
            let inventory: Vec<&str> = inventory.iter().map(String::as_str).collect();
            let joined: String = pieces.concat();
            let cut = joined.char_indices().map(|(i, _)| i).nth(split).unwrap_or(joined.len());
            let texts = [&joined[..cut], &joined[cut..]];
            prop_assert_eq!(reference_files(&texts, &inventory), by_contains(&texts, &inventory));
        }
    }
}
