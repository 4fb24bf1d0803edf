//! Hook dispatch cost: an empty bus (the common case: no hooks configured)
//! against a trivial subprocess hook, measured in the same run.
//!
//! Run: `cargo bench --bench hooks`.

use std::time::{Duration, Instant};

use keel::hooks::{HookBus, HookEvent, HookPayload, HookSource, HooksConfig};
use tokio_util::sync::CancellationToken;

fn main() {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => return eprintln_and_exit(&format!("runtime: {error}")),
    };
    let dir = std::env::temp_dir();
    let payload = HookPayload { tool_name: Some("shell".into()), ..HookPayload::default() };
    let cancel = CancellationToken::new();

    let empty = HookBus::default();
    let rounds = 200_000u32;
    let started = Instant::now();
    runtime.block_on(async {
        for _ in 0..rounds {
            if !std::hint::black_box(&empty).is_empty() {
                empty.dispatch(HookEvent::PreToolUse, &payload, Some("shell"), &dir, &cancel).await;
            }
        }
    });
    let per_empty = started.elapsed() / rounds;

    let hooks = serde_json::json!({"PreToolUse": [{"matcher": "shell", "hooks": [{"type": "command", "command": "true"}]}]});
    let config = match HooksConfig::from_json(
        HookSource::User { name: "bench".into(), claude: false },
        &hooks,
    ) {
        Ok(config) => config,
        Err(error) => return eprintln_and_exit(&error.to_string()),
    };
    let bus = HookBus::new(vec![config], true);
    let runs = 50u32;
    let started = Instant::now();
    runtime.block_on(async {
        for _ in 0..runs {
            bus.dispatch(HookEvent::PreToolUse, &payload, Some("shell"), &dir, &cancel).await;
        }
    });
    let per_hook = started.elapsed() / runs;
    report(per_empty, per_hook);
}

#[allow(clippy::print_stdout)]
fn report(empty: Duration, hook: Duration) {
    println!("hook dispatch, no hooks configured: {:.1} ns per event", empty.as_nanos() as f64);
    println!(
        "hook dispatch, one `true` subprocess hook: {:.2} ms per event",
        hook.as_secs_f64() * 1e3
    );
}

#[allow(clippy::print_stderr)]
fn eprintln_and_exit(message: &str) {
    eprintln!("bench failed: {message}");
    std::process::exit(1);
}
