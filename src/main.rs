//! The a3s-iso command: the library behind a thin command line.

#![forbid(unsafe_code)]

mod cli;

fn main() {
    std::process::exit(cli::main());
}
