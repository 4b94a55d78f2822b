//! Command-line interface: one file per subcommand, each a thin layer over the library.

mod bedpost;
mod bench;
mod check;
mod compare;
mod devices;
mod dti;
mod dwi_args;
mod fim;
pub mod huge_pages;
mod probtrack;
mod register;
mod reproduce;
mod resample;
mod synth;
mod synth_t1;
mod track;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use neuroport::{BackendSpec, Inventory};

#[derive(Parser)]
#[command(
    name = "neuroport",
    version,
    about = "GPU methods for diffusion MRI and registration on CPU, OpenCL and CUDA, chosen at run time",
    after_help = "Output files: NIfTI outputs are .nii.gz, or .nii when FSLOUTPUTTYPE=NIFTI (NEUROPORT_OUTPUT_TYPE, same values, takes precedence). Existing files are never replaced without --force. A failed or interrupted run leaves no file behind."
)]
pub struct Cli {
    /// Device to run on: cpu, opencl, opencl:P:D, cuda, cuda:N, auto (CUDA > OpenCL GPU > CPU), or all (where a command runs each device in turn). dti, bedpost, track geodesic and probtrack also split one run across a comma-separated list (cuda:0,cuda:1; opencl:1:0,cuda:0; cpu,cpu = two CPU pools sharing the threads) or gpus (every GPU, once each; mixes such as gpus,cpu allowed)
    #[arg(long, global = true, default_value = "auto")]
    pub backend: BackendSpec,
    /// CPU threads for the cpu backend (default: all cores; at most 4 a core, or 1024)
    #[arg(long, global = true, value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// Overwrite existing output files (default: refuse, naming the first that exists)
    #[arg(long, global = true)]
    pub force: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// List the devices found on this machine (with --backend, those it runs on)
    Devices(devices::Args),
    /// Fit diffusion tensors: FA, MD, V1, RGB and the tensor volume (FSL dtifit names)
    Dti(dti::Args),
    /// Run every kernel on a device against the CPU reference on fresh random inputs
    Check(check::Args),
    /// Bayesian ball-and-sticks MCMC (FSL bedpostx's model and outputs)
    Bedpost(bedpost::Args),
    /// Probabilistic streamlining through bedpost's samples (FSL probtrackx2's outputs)
    Probtrack(probtrack::Args),
    /// Affine registration (002 AIRWC): NIfTI world mm, outputs a warped image, a world matrix and a FLIRT .mat
    Register(register::Args),
    /// Apply a register matrix (or a FLIRT .mat) to another image, as flirt -applyxfm, reg_resample or antsApplyTransforms: onto the reference grid, linear or nearest neighbour; runs on the CPU
    Resample(resample::Args),
    /// Rerun a paper's benchmark table on the selected devices (CSV, Markdown and plot)
    Reproduce(reproduce::Args),
    /// Merge result CSVs from several machines into one table and plot
    Compare(compare::Args),
    /// Write a synthetic phantom (DWI, bvals, bvecs, masks, ground truth) to try the pipeline on
    Synth(synth::Args),
    /// Minimal path cost through the tensor field and region-to-region connectivity (FIM, paper 004)
    Fim(fim::Args),
    /// Tractography
    #[command(subcommand)]
    Track(track::Command),
    /// Kernel throughput benchmarks on the selected devices (default: every device)
    #[command(subcommand)]
    Bench(bench::Command),
}

/// Shared state handed to every subcommand.
pub struct Ctx {
    pub backend: BackendSpec,
    /// Discovery runs on its own thread while the command reads its inputs (driver start-up is
    /// 0.1-0.3 s on the H100 box, as long as reading a large .nii.gz); the first use waits.
    pending: std::sync::Mutex<Option<std::thread::JoinHandle<Inventory>>>,
    inventory: std::sync::OnceLock<Inventory>,
    threads: Option<usize>,
    /// The APIs to probe: those `--backend` can pick from (None: every API).
    probe: Option<BackendSpec>,
}

impl Ctx {
    /// Commands that can run on several devices treat the default `auto` as `all`.
    pub fn backend_or_all(&self) -> BackendSpec {
        if self.backend == BackendSpec::Auto {
            BackendSpec::All
        } else {
            self.backend.clone()
        }
    }

    /// Says `--backend` and `--threads` when given to a command that runs on no device.
    pub fn warn_unused_device_options(&self, command: &str, instead: &str) {
        if let Some(w) = neuroport::runtime::unused::unused_device_options(command, instead, &self.backend, self.threads) {
            eprintln!("{w}");
        }
    }

    /// Says `--threads` when given to a run on no cpu backend.
    pub fn warn_unused_threads(&self, devices: &[neuroport::Device]) {
        if let Some(w) = neuroport::runtime::unused::unused_threads(self.threads, devices) {
            eprintln!("{w}");
        }
    }

    /// The devices a command that splits its work runs on (one for a single-device spec).
    pub fn split(&self) -> anyhow::Result<neuroport::runtime::split::Split> {
        let devices = self.inventory().select_split(&self.backend)?;
        self.warn_unused_threads(&devices);
        Ok(neuroport::runtime::split::Split::new(devices))
    }

    fn new(cli: &Cli) -> Ctx {
        // Commands that list, check or compare devices see every API; the others only what
        // their --backend can pick from.
        let every = matches!(cli.command, Command::Devices(_) | Command::Check(_) | Command::Reproduce(_) | Command::Bench(_));
        let spec = (!every).then(|| cli.backend.clone());
        // The driver starts only the GPU such a command can use (`first_cuda_device_only`); a
        // CUDA_VISIBLE_DEVICES of the user's stays as it is.
        if spec.as_ref().is_some_and(BackendSpec::first_cuda_device_only) && std::env::var_os("CUDA_VISIBLE_DEVICES").is_none() {
            // SAFETY: no other thread has started yet (discovery is spawned below), so nothing
            // reads the environment while it changes.
            unsafe { std::env::set_var("CUDA_VISIBLE_DEVICES", "0") };
        }
        let threads = cli.threads;
        // Commands that may not touch a device discover on first use, on this thread (as every
        // command does with NEUROPORT_DISCOVERY=late, for measuring what the overlap costs: round
        // 26 on the H100 host, the reading 20-25 % faster without it beside, the command slower).
        let late = std::env::var("NEUROPORT_DISCOVERY").is_ok_and(|v| v == "late");
        let background = !late && !matches!(cli.command, Command::Compare(_) | Command::Synth(_) | Command::Resample(_));
        let probe = spec.clone();
        let pending = background
            .then(|| {
                std::thread::Builder::new()
                    .name("discovery".into())
                    .spawn(move || {
                        let inv = Inventory::discover_for(threads, spec.as_ref());
                        // The one GPU such a command will use, opened while it reads.
                        if let Some(s) = &spec {
                            inv.open_ahead(s);
                        }
                        inv
                    })
                    .ok()
            })
            .flatten();
        Ctx { backend: cli.backend.clone(), pending: std::sync::Mutex::new(pending), inventory: std::sync::OnceLock::new(), threads, probe }
    }

    /// The devices found (waits for discovery the first time).
    pub fn inventory(&self) -> &Inventory {
        self.inventory.get_or_init(|| {
            let pending = self.pending.lock().map(|mut p| p.take()).unwrap_or(None);
            neuroport::runtime::stages::stage("devices", || match pending.map(|h| h.join()) {
                Some(Ok(inv)) => inv,
                // A thread that could not start, or that panicked: discover here (only the CPU
                // after a panic, so a broken driver cannot take the command down twice).
                None => Inventory::discover_for(self.threads, self.probe.as_ref()),
                Some(Err(_)) => Inventory::discover_for(self.threads, Some(&BackendSpec::Cpu)),
            })
        })
    }
}

/// A discovery thread still running when the command ends is waited for: leaving it to die at
/// exit while a driver (PoCL's LLVM) initialises aborts the process in the driver's destructors.
impl Drop for Ctx {
    fn drop(&mut self) {
        if let Some(h) = self.pending.get_mut().ok().and_then(Option::take) {
            let _ = h.join();
        }
    }
}

/// Prints `s` on stdout. A reader that has left (`neuroport compare ... | head -1`) is not the
/// command's failure: println! panicked there (exit 101 with a backtrace), and reproduce, which
/// prints each table before writing its files, lost them.
pub fn print_out(s: &str) -> anyhow::Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(s.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => anyhow::bail!("cannot write to standard output: {}", neuroport::volume::plain_io(&e)),
        Ok(()) => Ok(()),
    }
}

/// The run summary's second line when a run was split: chunks and busy time per device.
pub fn print_shares(split: &neuroport::runtime::split::Split, shares: &neuroport::runtime::split::Shares) {
    shares_line(split.len() > 1, shares);
}

fn shares_line(several: bool, shares: &neuroport::runtime::split::Shares) {
    if several {
        eprintln!("split: {shares}");
    }
}

/// A split run's devices, released on a thread of their own once their work is done, while the
/// command writes its outputs (a CUDA context's release takes 60-80 ms on the H100); what the run
/// summary needs from them is kept. The release has ended when this is dropped.
pub struct Released {
    pub label: String,
    several: bool,
    _release: neuroport::runtime::stages::Aside,
}

impl Released {
    pub fn new(split: neuroport::runtime::split::Split) -> Released {
        let (label, several) = (split.label(), split.len() > 1);
        Released { label, several, _release: release(split) }
    }

    /// The summary's second line when the run was split (as [`print_shares`]).
    pub fn print_shares(&self, shares: &neuroport::runtime::split::Shares) {
        shares_line(self.several, shares);
    }
}

/// Releases `held` (devices, kernels) on a thread of its own, beside the outputs' writing.
/// Leaving it to the process's exit instead gained nothing (round 28: the driver's teardown
/// then runs at the exit; dti, bedpost, fim and register on one and two H100s).
pub fn release<T: Send + 'static>(held: T) -> neuroport::runtime::stages::Aside {
    neuroport::runtime::stages::Aside::spawn("release", move || drop(held))
}

/// `--threads`: 0 ran one thread without a word, and 10^5 spent minutes making threads before
/// dying of their stacks; any count up to 4 a core (or 1024, on a small machine) is a choice.
fn parse_threads(s: &str) -> Result<usize, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let most = (4 * cores).max(1024);
    match s.parse::<usize>() {
        Ok(n) if (1..=most).contains(&n) => Ok(n),
        _ => Err(format!("must be a whole number from 1 to {most} (this machine has {cores} cores)")),
    }
}

/// Every (sub)command takes negative numbers as values (`--step -0.1` reaches the command's own
/// check instead of clap's "unexpected argument '-0'").
fn negative_numbers(c: clap::Command) -> clap::Command {
    c.allow_negative_numbers(true).mut_subcommands(negative_numbers)
}

fn parse() -> Result<Cli, clap::Error> {
    let m = negative_numbers(Cli::command()).try_get_matches()?;
    Cli::from_arg_matches(&m)
}

/// `neuroport devices | head -1`: once the reader has gone, `println!` panicked ("failed printing
/// to stdout: Broken pipe") with a backtrace. Rust ignores SIGPIPE so that a write to a closed
/// FIFO is an error an output can report (io::tck's test); for stdout and stderr a command line
/// tool stops quietly, as SIGPIPE would stop it: exit status 141 (128 + SIGPIPE), as a shell
/// reports a tool SIGPIPE ended. The outputs are committed before their names are printed, and
/// uncommitted temporaries are unnamed files on Linux (volume::temps), so nothing is left behind.
/// Commands whose work follows their printing, or whose exit status is their result (reproduce,
/// compare, check), print through [`print_out`] instead and carry on.
/// Any other failure to print (stdout or stderr on a full disk, `> /dev/full`) panicked the same
/// way, exit 101 with a backtrace: it is one plain line (where stderr still takes it) and exit 1.
/// Either way the named temporaries of outputs not yet committed go first (the exit skips their
/// `Drop`).
fn quiet_on_closed_pipe() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        let msg = p.downcast_ref::<String>().map(String::as_str).or_else(|| p.downcast_ref::<&str>().copied()).unwrap_or("");
        if let Some(rest) = msg.strip_prefix("failed printing to std") {
            neuroport::volume::remove_temporaries_now();
            if msg.contains("Broken pipe") {
                std::process::exit(141);
            }
            let stream = if rest.starts_with("out") { "standard output" } else { "standard error" };
            let why = rest.split_once(": ").map_or(rest, |(_, w)| w);
            let why = why.rfind(" (os error ").map_or(why, |i| &why[..i]);
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "error: cannot write to {stream}: {why}");
            std::process::exit(1);
        }
        prev(info)
    }));
}

pub fn main() -> i32 {
    quiet_on_closed_pipe();
    let before_main = neuroport::runtime::stages::since_exec_ms();
    let t0 = std::time::Instant::now();
    let code = run_cli();
    if neuroport::runtime::stages::wanted() {
        eprintln!("{}", neuroport::runtime::stages::line(before_main, t0.elapsed().as_secs_f64() * 1e3));
    }
    code
}

fn run_cli() -> i32 {
    let cli = match parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    neuroport::volume::set_overwrite(cli.force);
    let ctx = Ctx::new(&cli);
    let r = match cli.command {
        Command::Devices(a) => devices::run(&ctx, a),
        Command::Dti(a) => dti::run(&ctx, a),
        Command::Check(a) => check::run(&ctx, a),
        Command::Bedpost(a) => bedpost::run(&ctx, a),
        Command::Probtrack(a) => probtrack::run(&ctx, a),
        Command::Register(a) => register::run(&ctx, a),
        Command::Resample(a) => resample::run(&ctx, a),
        Command::Reproduce(a) => reproduce::run(&ctx, a),
        Command::Compare(a) => compare::run(&ctx, a),
        Command::Synth(a) => synth::run(&ctx, a),
        Command::Fim(a) => fim::run(&ctx, a),
        Command::Track(c) => track::run(&ctx, c),
        Command::Bench(c) => bench::run(&ctx, c),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            // One line with its causes; never a backtrace (RUST_BACKTRACE may be set).
            eprintln!("error: {e:#}");
            1
        }
    }
}
