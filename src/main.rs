//! The `neuroport` command: a thin layer over the library.

mod cli;

#[global_allocator]
static ALLOCATOR: cli::huge_pages::HugePages = cli::huge_pages::HugePages;

fn main() {
    cli::huge_pages::configure();
    std::process::exit(cli::main());
}
