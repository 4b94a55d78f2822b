//! `--backend` and `--threads` are global options: every subcommand accepts them, and those that
//! run on no device (compare, synth) dropped them without a word, as runs on GPUs alone dropped
//! `--threads`. They are said, as
//! `fim::unused_backend_warning` says a backend the sweeps leave unused: a warning, not an error,
//! since the command's result is the one asked for.

use super::{BackendSpec, Device};

/// The warning for `--backend` (other than the default `auto`) or `--threads` given to
/// `command`, which runs on no device; `instead` says what it does. None when neither was given.
pub fn unused_device_options(command: &str, instead: &str, backend: &BackendSpec, threads: Option<usize>) -> Option<String> {
    let given: Vec<String> = (*backend != BackendSpec::Auto).then(|| format!("--backend {backend}")).into_iter().chain(threads.map(|t| format!("--threads {t}"))).collect();
    (!given.is_empty()).then(|| {
        let verb = if given.len() > 1 { "do" } else { "does" };
        format!("warning: {} {verb} not apply to {command}, which {instead}", given.join(" and "))
    })
}

/// The warning for `--threads` given to a run on `devices` none of which is the cpu backend: the
/// count sizes that backend's pool alone (an OpenCL CPU device such as PoCL sizes its own).
pub fn unused_threads(threads: Option<usize>, devices: &[Device]) -> Option<String> {
    let t = threads?;
    let specs: Vec<String> = devices.iter().map(|d| d.info().spec.clone()).collect();
    (!devices.is_empty() && devices.iter().all(|d| !d.is_cpu())).then(|| format!("warning: --threads {t} applies to the cpu backend; this run is on {}", specs.join(", ")))
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
