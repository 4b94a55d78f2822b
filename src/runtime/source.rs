//! Assembly of device sources. Every `.cl`/`.cu` file is embedded in the binary and its
//! `#include "common/..."` lines are expanded here from the embedded shared headers, so the
//! device math in `cl/common/` is written once for both dialects and no file is read at run time.

use anyhow::{anyhow, Result};

/// Which GPU dialect a source is assembled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    OpenCl,
    Cuda,
}

/// The shared headers, by the name used in `#include "common/<name>"`.
const HEADERS: &[(&str, &str)] = &[
    ("portable.h", include_str!("../../cl/common/portable.h")),
    ("sym3.h", include_str!("../../cl/common/sym3.h")),
    ("dti.h", include_str!("../../cl/common/dti.h")),
    ("geodesic.h", include_str!("../../cl/common/geodesic.h")),
    ("rng.h", include_str!("../../cl/common/rng.h")),
    ("bedpost.h", include_str!("../../cl/common/bedpost.h")),
    ("probtrack.h", include_str!("../../cl/common/probtrack.h")),
    ("register.h", include_str!("../../cl/common/register.h")),
    ("fim.h", include_str!("../../cl/common/fim.h")),
    ("fim_roots.h", include_str!("../../cl/common/fim_roots.h")),
];

/// Looks up a shared header; later modules register theirs in `HEADERS`.
pub fn header(name: &str) -> Option<&'static str> {
    HEADERS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Expands includes (once each, recursively) and prefixes the dialect define.
pub fn assemble(dialect: Dialect, entry: &str) -> Result<String> {
    let mut out = String::new();
    out.push_str(match dialect {
        Dialect::OpenCl => "#define NP_OPENCL 1\n",
        Dialect::Cuda => "#define NP_CUDA 1\n",
    });
    let mut seen = Vec::new();
    expand(entry, &mut out, &mut seen)?;
    Ok(out)
}

/// The build options a source names after `marker` (e.g. `NP_NVRTC_OPTIONS:`): at each place
/// it appears, the words that follow it while they start with `prefix` (`--` for NVRTC, `-` for
/// OpenCL); none without it. Every place counts, so a host's prefix can add to an entry file's.
pub fn marked_options(src: &str, marker: &str, prefix: &str) -> Vec<String> {
    src.match_indices(marker)
        .flat_map(|(at, _)| src[at + marker.len()..].split_whitespace().take_while(|w| w.starts_with(prefix)).map(str::to_string))
        .collect()
}

fn expand(src: &str, out: &mut String, seen: &mut Vec<String>) -> Result<()> {
    for line in src.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("#include") {
            let name = rest.trim().trim_matches('"');
            if let Some(short) = name.strip_prefix("common/") {
                if !seen.iter().any(|s| s == short) {
                    seen.push(short.to_string());
                    let body = header(short)
                        .ok_or_else(|| anyhow!("device source includes unknown header {name}"))?;
                    expand(body, out, seen)?;
                }
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn includes_expand_once_and_unknown_is_an_error() {
        let s = assemble(Dialect::Cuda, "#include \"common/sym3.h\"\n#include \"common/portable.h\"\nX").unwrap();
        assert!(s.starts_with("#define NP_CUDA 1"));
        assert_eq!(s.matches("#ifndef NP_PORTABLE_H").count(), 1);
        assert!(s.ends_with("X\n"));
        assert!(assemble(Dialect::OpenCl, "#include \"common/nope.h\"").is_err());
    }
}
