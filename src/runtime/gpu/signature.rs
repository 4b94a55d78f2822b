//! Kernel signatures read from the entry source, and the check every launch makes against them.
//! The check is the same on both APIs, so a swapped or missing argument that PoCL catches in CI
//! is the argument list CUDA would have run.

use super::args::Arg;
use anyhow::{anyhow, bail, Result};
use std::collections::HashMap;

/// What a kernel parameter accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A device buffer of this element type (`f32`, `i32`, `u32`, `u8`, `u64`, `i64`, `f32x4`,
    /// or `struct` for any Pod type).
    Buffer { elem: &'static str, big: bool },
    I32,
    U32,
    F32,
    U64,
    Texture,
    Struct(String),
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
}

/// Every `NP_KERNEL` entry point of an entry source, by name.
pub fn parse(source: &str) -> Result<HashMap<String, Vec<Param>>> {
    let joined = source.replace("\\\n", " ");
    let defines = object_defines(&joined);
    let mut out = HashMap::new();
    let mut rest = joined.as_str();
    while let Some(at) = rest.find("NP_KERNEL") {
        rest = &rest[at + "NP_KERNEL".len()..];
        let open = rest.find('(').ok_or_else(|| anyhow!("NP_KERNEL without a parameter list"))?;
        let head: Vec<&str> = rest[..open].split_whitespace().collect();
        let name = head.last().ok_or_else(|| anyhow!("NP_KERNEL without a name"))?.to_string();
        let close = matching_paren(rest, open).ok_or_else(|| anyhow!("kernel {name}: unbalanced parameter list"))?;
        let list = expand(&rest[open + 1..close], &defines);
        let params = if list.trim().is_empty() || list.trim() == "void" {
            Vec::new()
        } else {
            list.split(',').map(|p| param(p.trim())).collect::<Result<Vec<_>>>().map_err(|e| anyhow!("kernel {name}: {e}"))?
        };
        out.insert(name, params);
        rest = &rest[close..];
    }
    Ok(out)
}

fn matching_paren(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `#define NAME body` lines without parameters (the entry files' shared argument lists).
fn object_defines(src: &str) -> HashMap<String, String> {
    let mut m = HashMap::new();
    for line in src.lines() {
        let Some(rest) = line.trim_start().strip_prefix("#define") else { continue };
        let rest = rest.trim_start();
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if rest[end..].starts_with('(') {
            continue;
        }
        m.insert(rest[..end].to_string(), rest[end..].trim().to_string());
    }
    m
}

fn expand(text: &str, defines: &HashMap<String, String>) -> String {
    let mut s = text.to_string();
    for _ in 0..8 {
        let mut changed = false;
        let mut out = String::with_capacity(s.len());
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String, changed: &mut bool| {
            if let Some(body) = defines.get(word.as_str()) {
                out.push_str(body);
                *changed = true;
            } else {
                out.push_str(word);
            }
            word.clear();
        };
        for c in s.chars() {
            if c.is_alphanumeric() || c == '_' {
                word.push(c);
            } else {
                flush(&mut word, &mut out, &mut changed);
                out.push(c);
            }
        }
        flush(&mut word, &mut out, &mut changed);
        s = out;
        if !changed {
            break;
        }
    }
    s
}

const QUALIFIERS: &[&str] = &[
    "NP_GLOBAL", "NP_CONST_PTR", "NP_RESTRICT", "const", "restrict", "__restrict__", "__global", "global", "__constant",
    "__read_only", "read_only", "volatile",
];

fn param(text: &str) -> Result<Param> {
    let spaced = text.replace('*', " * ");
    let toks: Vec<&str> = spaced.split_whitespace().collect();
    let name = toks.last().filter(|t| *t != &"*").ok_or_else(|| anyhow!("cannot read parameter '{text}'"))?.to_string();
    let pointer = toks.contains(&"*");
    let ty: Vec<&str> = toks[..toks.len() - 1].iter().copied().filter(|t| *t != "*" && !QUALIFIERS.contains(t)).collect();
    let ty = ty.join(" ");
    let kind = if pointer {
        ParamKind::Buffer { elem: elem_of(&ty), big: name.ends_with("_big") }
    } else {
        match ty.as_str() {
            "int" => ParamKind::I32,
            "np_uint" | "uint" | "unsigned int" | "unsigned" => ParamKind::U32,
            "float" => ParamKind::F32,
            "np_ulong" | "ulong" | "unsigned long long" => ParamKind::U64,
            "NP_TEX3D" | "image3d_t" => ParamKind::Texture,
            "" => bail!("parameter '{text}' has no type"),
            other => ParamKind::Struct(other.to_string()),
        }
    };
    Ok(Param { name, kind })
}

fn elem_of(ty: &str) -> &'static str {
    match ty {
        "float" => "f32",
        "int" => "i32",
        "np_uint" | "uint" | "unsigned int" | "unsigned" => "u32",
        "np_uchar" | "uchar" | "unsigned char" => "u8",
        "np_ulong" | "ulong" | "unsigned long long" => "u64",
        "np_long" | "long" | "long long" => "i64",
        "np_float4" | "float4" => "f32x4",
        _ => "struct",
    }
}

/// Checks a launch's arguments against the kernel's parameters: count, kinds, element types, and
/// the 32-bit index range of every buffer not marked `_big`.
pub fn check(kernel: &str, params: &[Param], args: &[Arg]) -> Result<()> {
    if params.len() != args.len() {
        bail!("kernel {kernel} takes {} arguments, {} given", params.len(), args.len());
    }
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        let bad = |got: &str| anyhow!("kernel {kernel}: argument {i} ({}) expects {:?}, got {got}", p.name, p.kind);
        match (&p.kind, a) {
            (ParamKind::Buffer { elem, big }, Arg::Buf(b)) => {
                let got = b.elem_name();
                let ok = match *elem {
                    "struct" => true,
                    "f32x4" => got == "f32" && b.elem_count() % 4 == 0 || got == "f32x4",
                    e => e == got,
                };
                if !ok {
                    return Err(bad(&format!("a buffer of {got}")));
                }
                let index_range = if *elem == "f32x4" && got == "f32" { b.elem_count() / 4 } else { b.elem_count() };
                if !big && index_range > i32::MAX as usize {
                    bail!(
                        "kernel {kernel}: argument {i} ({}) holds {index_range} elements, beyond the kernel's 32-bit indexing",
                        p.name
                    );
                }
            }
            (ParamKind::I32, Arg::I32(_))
            | (ParamKind::U32, Arg::U32(_))
            | (ParamKind::F32, Arg::F32(_))
            | (ParamKind::U64, Arg::U64(_))
            | (ParamKind::Texture, Arg::Tex(_))
            | (ParamKind::Struct(_), Arg::Struct(_)) => {}
            (_, a) => return Err(bad(a.kind_name())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r#"
#include "common/portable.h"
#define ARGS NP_GLOBAL const float *NP_RESTRICT y, int n, \
    NP_GLOBAL np_uint *rng
NP_KERNEL void a(ARGS, float s, np_geo_params p, NP_TEX3D t0, NP_GLOBAL const np_float4 *f4)
{ int x = (1 + 2); }
NP_KERNEL void b(NP_GLOBAL float *out_big) {}
"#;

    #[test]
    fn parses_macros_qualifiers_and_kinds() {
        let m = parse(SRC).unwrap();
        let a = &m["a"];
        let kinds: Vec<_> = a.iter().map(|p| p.kind.clone()).collect();
        assert_eq!(
            kinds,
            vec![
                ParamKind::Buffer { elem: "f32", big: false },
                ParamKind::I32,
                ParamKind::Buffer { elem: "u32", big: false },
                ParamKind::F32,
                ParamKind::Struct("np_geo_params".into()),
                ParamKind::Texture,
                ParamKind::Buffer { elem: "f32x4", big: false },
            ]
        );
        assert_eq!(a[0].name, "y");
        assert_eq!(m["b"][0].kind, ParamKind::Buffer { elem: "f32", big: true });
    }
}
