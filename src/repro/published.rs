//! The published tables (transcribed from the papers, `data/paper-tables/`), embedded in the
//! binary so a report can print the paper's figure beside ours anywhere.

use std::collections::BTreeMap;

const TABLES: &[(&str, &str)] = &[
    ("geodesic_table1_read_volume", include_str!("../../data/paper-tables/geodesic_table1_read_volume.csv")),
    ("geodesic_table3_speedup", include_str!("../../data/paper-tables/geodesic_table3_speedup.csv")),
    ("mcmc_table3_speedup", include_str!("../../data/paper-tables/mcmc_table3_speedup.csv")),
    ("probtrack_table2_speedup", include_str!("../../data/paper-tables/probtrack_table2_speedup.csv")),
    ("probtrack_table4_segmentation", include_str!("../../data/paper-tables/probtrack_table4_segmentation.csv")),
    ("fim_table1_runtime", include_str!("../../data/paper-tables/fim_table1_runtime.csv")),
    ("airwc_results", include_str!("../../data/paper-tables/airwc_results.csv")),
];

/// A published table as rows of column -> cell.
pub fn table(name: &str) -> Vec<BTreeMap<String, String>> {
    let Some((_, text)) = TABLES.iter().find(|(n, _)| *n == name) else {
        return Vec::new();
    };
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = r.headers().map(|h| h.iter().map(String::from).collect()).unwrap_or_default();
    r.records()
        .filter_map(|rec| rec.ok())
        .map(|rec| header.iter().cloned().zip(rec.iter().map(String::from)).collect())
        .collect()
}

/// The numeric cell `col` of the first row whose `key` column equals `value`.
pub fn lookup(name: &str, key: &str, value: &str, col: &str) -> Option<f64> {
    table(name).into_iter().find(|r| r.get(key).map(|v| v == value).unwrap_or(false)).and_then(|r| r.get(col)?.parse().ok())
}

/// A published figure for a note: the number, or "not given".
pub fn shown(v: Option<f64>) -> String {
    v.map_or_else(|| "not given".to_string(), |x| format!("{x}"))
}

/// Figures the papers give in their text rather than in a table.
pub mod text {
    /// 001 Sec. 5.2: tensor preparation takes roughly 50 ms per million voxels on a GTX 260.
    pub const GEODESIC_PREP_MS_PER_MVOX: f64 = 50.0;
    pub const GEODESIC_PREP_DEVICE: &str = "GeForce GTX 260 (001 Sec. 5.2)";
}

#[cfg(test)]
mod tests {
    #[test]
    fn shown_prints_the_number_or_says_it_is_missing() {
        assert_eq!(super::shown(Some(1.5)), "1.5");
        assert_eq!(super::shown(None), "not given");
    }

    #[test]
    fn tables_parse() {
        assert_eq!(super::lookup("geodesic_table3_speedup", "seeds", "4096", "time_s"), Some(5.571));
        assert_eq!(super::lookup("mcmc_table3_speedup", "dataset", "1", "gpu_s"), Some(41.3));
        assert_eq!(super::table("geodesic_table1_read_volume").len(), 4);
    }
}
