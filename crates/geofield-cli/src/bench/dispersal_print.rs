//! The table of `geofield bench dispersal`: a row per method, and the ratios between methods.

use super::dispersal::MethodResult;

pub(super) fn print_row(m: &MethodResult) {
    let radii: Vec<String> = m.radius_m.iter().map(|r| format!("{r:.0}")).collect();
    println!(
        "{:<18} {:>11} {:>10} {:>11} {:>8} {:>10} {:>10} {:>10}  {}{}",
        label_str(m),
        fmt_s(m.seconds),
        format!("{:.2e}", m.pairs),
        format!("{:.2e}/s", m.pairs_per_s),
        m.sfu_share
            .map(|s| format!("{:.0}%", s * 100.0))
            .unwrap_or_else(|| "-".into()),
        format!("{:.1e}", m.error.max_rel),
        format!("{:.1e}", m.error.mean_rel),
        format!("{:.1e}", m.error.max_abs_over_max),
        if radii.is_empty() {
            String::new()
        } else {
            format!("R/rho {} m", radii.join("/"))
        },
        m.note
            .as_ref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default()
    );
}

fn label_str(m: &MethodResult) -> String {
    match m.tolerance {
        Some(t) => format!("{} tol {t:.0e}", m.method),
        None => m.method.clone(),
    }
}

pub(super) fn fmt_s(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.1} us", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

pub(super) fn print_ratios(ms: &[MethodResult]) {
    let find = |name: &str| ms.iter().find(|m| m.method == name);
    if let Some(mr) = find("multires") {
        for c in ms.iter().filter(|m| m.method == "cutoff") {
            println!(
                "   cutoff tol {:.0e} vs multires: {:.1}x faster, max error {:.0}x smaller, mean error {:.0}x smaller",
                c.tolerance.unwrap_or(0.0),
                mr.seconds / c.seconds,
                mr.error.max_rel / c.error.max_rel.max(1e-300),
                mr.error.mean_rel / c.error.mean_rel.max(1e-300),
            );
        }
    }
    if let Some(ex) = find("exact") {
        for c in ms.iter().filter(|m| m.method != "exact") {
            println!(
                "   {} vs exact: {:.1}x faster",
                label_str(c),
                ex.seconds / c.seconds
            );
        }
    }
}

pub(super) fn header() -> String {
    format!(
        "{:<18} {:>11} {:>10} {:>11} {:>8} {:>10} {:>10} {:>10}",
        "method", "time", "pairs", "rate", "SFU", "max rel", "mean rel", "abs/max"
    )
}
