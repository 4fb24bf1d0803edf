//! The `keel` binary: parses flags, starts the async runtime, maps errors
//! to exit codes.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use keel::cli::{self, CliError, ErrorKind};

fn main() -> ExitCode {
    // Parsing first: `--version` and `--help` never start a runtime.
    let cli = cli::parse_or_exit();
    init_tracing();
    // Before any tool or hook runs: caught panics stay quiet (see panic_guard).
    keel::support::panic_guard::install_hook();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            let error =
                CliError::new(ErrorKind::Runtime, error).context("cannot start the async runtime");
            return fail(&error);
        }
    };
    let outcome = runtime.block_on(cli::run(cli));
    // Blocking tool threads must not keep the process alive.
    runtime.shutdown_timeout(Duration::from_millis(200));
    match outcome {
        Ok(status) => ExitCode::from(status.code()),
        Err(error) => fail(&error),
    }
}

fn fail(error: &CliError) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "{}", error.render());
    ExitCode::from(error.exit_status().code())
}

/// Diagnostics go to stderr, filtered by `KEEL_LOG` (e.g. `KEEL_LOG=debug`).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("KEEL_LOG")
        // rmcp logs a misbehaving server at warn level; keel reports
        // servers itself (and stderr is the TUI's screen).
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp=off"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}
