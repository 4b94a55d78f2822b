//! `--backend` and `--threads` are global options: every subcommand accepts them, and those that
//! run on no device (compare, synth) dropped them without a word. They are said, as
//! `fim::unused_backend_warning` says a backend the sweeps leave unused: a warning, not an error,
//! since the command's result is the one asked for.

use super::BackendSpec;

/// The warning for `--backend` (other than the default `auto`) or `--threads` given to
/// `command`, which runs on no device; `instead` says what it does. None when neither was given.
pub fn unused_device_options(command: &str, instead: &str, backend: &BackendSpec, threads: Option<usize>) -> Option<String> {
    let given: Vec<String> = (*backend != BackendSpec::Auto).then(|| format!("--backend {backend}")).into_iter().chain(threads.map(|t| format!("--threads {t}"))).collect();
    (!given.is_empty()).then(|| {
        let verb = if given.len() > 1 { "do" } else { "does" };
        format!("warning: {} {verb} not apply to {command}, which {instead}", given.join(" and "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_device_options_are_named() {
        let w = |b: &str, t| unused_device_options("compare", "runs nothing", &b.parse().unwrap(), t);
        assert_eq!(w("auto", None), None);
        assert_eq!(w("cuda:1", None).unwrap(), "warning: --backend cuda:1 does not apply to compare, which runs nothing");
        assert_eq!(w("auto", Some(4)).unwrap(), "warning: --threads 4 does not apply to compare, which runs nothing");
        assert_eq!(w("cpu", Some(2)).unwrap(), "warning: --backend cpu and --threads 2 do not apply to compare, which runs nothing");
    }
}
