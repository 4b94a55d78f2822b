//! elastix's transform parameter files (TransformParameters.0.txt, as elastix writes them and
//! transformix reads them), read into the LPS matrix that [`super::itk`] turns into
//! neuroport's world transform.
//!
//! A parameter file holds one `(Key value ...)` per line, `//` comments between. elastix maps a
//! fixed-image point to the moving image in ITK's LPS physical space, as ITK does, and its
//! linear kinds are ITK's under other names (elastix's Advanced* transforms compute the same
//! matrices): EulerTransform is Euler3DTransform (CenterOfRotationPoint its centre, ComputeZYX
//! its angle order), SimilarityTransform is Similarity3DTransform, AffineTransform and
//! TranslationTransform keep their names. A file may name an initial transform
//! (InitialTransformParameterFileName), which is read first and combined as
//! HowToCombineTransforms says: "Compose" (the default), T(x) = T1(T0(x)); "Add",
//! T(x) = T1(x) + T0(x) - x (elastix's AdvancedCombinationTransform).

use super::affine::{mul, Mat4, IDENTITY};
use super::itk::{self, Raw};
use anyhow::{anyhow, bail, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Whether `head` (a file's first bytes) is an elastix parameter file: its first line other
/// than blank ones and `//` comments is `(Key ...`. A matrix file starts with a number or `#`.
pub fn is_parameter_file(head: &str) -> bool {
    head.trim_start_matches('\u{feff}').lines().map(|l| l.split("//").next().unwrap_or("").trim()).find(|l| !l.is_empty()).is_some_and(|l| l.starts_with('('))
}

type Map = HashMap<String, Vec<String>>;

/// The transform of the parameter file at `path`, its chain of initial transforms combined, in
/// LPS, unchecked ([`itk::ras`] checks it); each error one line naming the file at fault.
pub(super) fn read_lps(path: &Path) -> Result<Mat4> {
    chain(path, &mut Vec::new())
}

fn chain(path: &Path, seen: &mut Vec<PathBuf>) -> Result<Mat4> {
    let shown = path.display();
    seen.push(path.canonicalize().unwrap_or_else(|_| path.to_path_buf()));
    let map = parse(&crate::volume::read_text(path)?).map_err(|e| anyhow!("{shown}: {e}"))?;
    let own = transform(&map, path).map_err(|e| anyhow!("{shown}: {e}"))?;
    let Some(name) = initial(&map) else { return Ok(own) };
    let add = match map.get("HowToCombineTransforms").and_then(|v| v.first()).map(String::as_str) {
        None | Some("Compose") => false,
        Some("Add") => true,
        Some(other) => bail!("{shown}: HowToCombineTransforms \"{other}\" is neither \"Compose\" nor \"Add\""),
    };
    let file = resolve(path, name);
    if !file.is_file() {
        bail!("{shown}: its initial transform \"{name}\" (InitialTransformParameterFileName) is not found: neither {name} from the working directory nor {} beside this file exists (where elastix looks)", file.display());
    }
    if seen.contains(&file.canonicalize().unwrap_or_else(|_| file.clone())) {
        bail!("{shown}: its initial transform \"{name}\" leads back to a file of the chain (a loop)");
    }
    if itk::detect(&file) != Some(itk::Format::Elastix) {
        bail!("{}: not an elastix transform parameter file (it is the initial transform of {shown})", file.display());
    }
    let first = chain(&file, seen)?;
    Ok(if add { std::array::from_fn(|r| std::array::from_fn(|c| own[r][c] + first[r][c] - IDENTITY[r][c])) } else { mul(&own, &first) })
}

/// The initial transform's file name as given, None for none ("NoInitialTransform"). elastix
/// renamed the key in 2023 (no 's'); the old one is still read, the new one preferred.
fn initial(map: &Map) -> Option<&str> {
    ["InitialTransformParameterFileName", "InitialTransformParametersFileName"]
        .iter()
        .filter_map(|k| map.get(*k).and_then(|v| v.first()))
        .map(String::as_str)
        .find(|v| !v.is_empty())
        .filter(|v| *v != "NoInitialTransform")
}

/// Where elastix looks for an initial transform named `name` in the file `path`
/// (TransformBase::ReadFromFile): as given when absolute or found from the working directory
/// (elastix writes the name it was given), else beside `path`.
fn resolve(path: &Path, name: &str) -> PathBuf {
    let given = PathBuf::from(name);
    if given.is_absolute() || given.is_file() {
        return given;
    }
    path.parent().map_or_else(|| given.clone(), |d| d.join(&given))
}

/// The file's entries as elastix's ParameterFileParser reads them: tabs are spaces, values
/// split at spaces outside quotes, quotes dropped, a key given twice refused.
fn parse(text: &str) -> Result<Map> {
    let mut map = Map::new();
    for (k, raw) in text.lines().enumerate() {
        let line = raw.split("//").next().unwrap_or("").replace('\t', " ");
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Some(inner) = line.strip_prefix('(').and_then(|l| l.strip_suffix(')')) else { bail!("line {}: '{line}' is not '(Key value ...)'", k + 1) };
        if inner.matches('"').count() % 2 == 1 {
            bail!("line {}: '{line}' has an odd number of quotes", k + 1);
        }
        let (mut words, mut word, mut quoted) = (Vec::new(), String::new(), false);
        for ch in inner.chars() {
            match ch {
                '"' => {
                    words.push(std::mem::take(&mut word));
                    quoted = !quoted;
                }
                ' ' if !quoted => words.push(std::mem::take(&mut word)),
                _ => word.push(ch),
            }
        }
        words.push(word);
        let key = words.remove(0);
        if key.is_empty() {
            bail!("line {}: '{line}' has no key", k + 1);
        }
        if map.insert(key.clone(), words.into_iter().filter(|w| !w.is_empty()).collect()).is_some() {
            bail!("line {}: {key} is given twice", k + 1);
        }
    }
    Ok(map)
}

/// The numbers of entry `key`, None when the file has no such entry.
fn numbers(map: &Map, key: &str) -> Result<Option<Vec<f64>>> {
    let Some(values) = map.get(key) else { return Ok(None) };
    values.iter().map(|w| w.parse::<f64>().map_err(|_| anyhow!("{key}: '{w}' is not a number"))).collect::<Result<_>>().map(Some)
}

/// This file's own transform (without its initial one) in LPS.
fn transform(map: &Map, path: &Path) -> Result<Mat4> {
    let Some(kind) = map.get("Transform").and_then(|v| v.first()) else { bail!("has no (Transform \"...\") entry: not an elastix transform parameter file") };
    for key in ["FixedImageDimension", "MovingImageDimension"] {
        if let Some(d) = map.get(key).and_then(|v| v.first()).filter(|d| d.as_str() != "3") {
            bail!("{kind} is a {d}-D transform ({key} {d}), neuroport's are 3-D");
        }
    }
    if ["BSpline", "Spline", "Deformation", "WithNormal"].iter().any(|w| kind.contains(w)) {
        bail!("{kind} is a nonlinear transform; neuroport applies affine transforms only (transformix applies this one)");
    }
    let (class, np) = match kind.as_str() {
        "EulerTransform" => ("Euler3DTransform", 6),
        "SimilarityTransform" => ("Similarity3DTransform", 7),
        "AffineTransform" => ("AffineTransform", 12),
        "TranslationTransform" => ("TranslationTransform", 3),
        "File" => return itk_file(map, path),
        _ => bail!("elastix's {kind} is not read (EulerTransform, SimilarityTransform, AffineTransform and TranslationTransform are)"),
    };
    // An ITK transform taken into elastix keeps ITK's own parameters (TransformBase::ReadFromFile).
    let itk_params = numbers(map, "ITKTransformParameters")?;
    let params = match (&itk_params, numbers(map, "TransformParameters")?) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) => p,
        (None, None) => bail!("{kind} has no TransformParameters"),
    };
    let declared = numbers(map, "NumberOfParameters")?.and_then(|n| n.first().copied());
    if let Some(n) = declared.filter(|n| itk_params.is_none() && *n != params.len() as f64) {
        bail!("{kind} has {} TransformParameters where NumberOfParameters says {n}", params.len());
    }
    if params.len() != np {
        bail!("{kind} has {} TransformParameters, {np} expected (a 3-D {kind})", params.len());
    }
    let itk_fixed = numbers(map, "ITKTransformFixedParameters")?;
    let mut fixed = match (numbers(map, "CenterOfRotationPoint")?, itk_fixed) {
        _ if kind == "TranslationTransform" => vec![],
        (Some(c), _) if c.len() == 3 => c,
        (Some(c), _) => bail!("{kind} has {} numbers in CenterOfRotationPoint, 3 expected", c.len()),
        (None, Some(f)) if f.len() >= 3 => f,
        (None, _) => bail!("{kind} has no CenterOfRotationPoint (its centre of rotation)"),
    };
    if kind == "EulerTransform" && fixed.len() == 3 {
        fixed.push(if map.get("ComputeZYX").and_then(|v| v.first()).is_some_and(|v| v == "true") { 1.0 } else { 0.0 });
    }
    itk::lps(&Raw { class: class.to_string(), params, fixed })
}

/// `(Transform "File")`: an ITK transform file (TransformFileName) that elastix reads. A
/// relative name is taken from the working directory by itk-elastix 0.25.4's transformix, beside the
/// parameter file by later elastix (elxConfiguration.cxx): the first that exists, as
/// [`resolve`].
fn itk_file(map: &Map, path: &Path) -> Result<Mat4> {
    let Some(name) = map.get("TransformFileName").and_then(|v| v.first()) else { bail!("(Transform \"File\") has no TransformFileName") };
    let file = resolve(path, name);
    if !file.is_file() {
        bail!("TransformFileName \"{name}\": {} is not found", file.display());
    }
    if matches!(itk::detect(&file), None | Some(itk::Format::Elastix)) {
        bail!("TransformFileName \"{name}\": {} is not an ITK transform file", file.display());
    }
    itk::read_lps(&file)
}
