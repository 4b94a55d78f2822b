//! The `neuroport` command: a thin layer over the library.

mod cli;

#[global_allocator]
static ALLOCATOR: cli::huge_pages::HugePages = cli::huge_pages::HugePages;

fn main() {
    cli::huge_pages::configure();
    let code = cli::main();
    if cli::quick_exit() {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        // SAFETY: every output is written and committed; nothing else is owed before the end.
        unsafe { libc::_exit(code) }
    }
    std::process::exit(code);
}
