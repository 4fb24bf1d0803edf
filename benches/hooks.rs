//! Hook dispatch cost, measured in the same run: a loop with no hook bus at
//! all (the baseline), an empty bus (no hooks configured: the `is_empty`
//! check callers make), the native `protect_secrets` hook alone (keel's
//! default), and a trivial subprocess hook.
//!
//! Run: `cargo bench --bench hooks`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use keel::hooks::{HookBus, HookEvent, HookPayload, HookSource, HooksConfig, ProtectSecrets};
use tokio_util::sync::CancellationToken;

fn main() {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => return eprintln_and_exit(&format!("runtime: {error}")),
    };
    let dir = std::env::temp_dir();
    let payload = HookPayload { tool_name: Some("shell".into()), ..HookPayload::default() };
    let cancel = CancellationToken::new();

    let rounds = 2_000_000u32;
    let started = Instant::now();
    runtime.block_on(async {
        for _ in 0..rounds {
            std::hint::black_box(&payload);
        }
    });
    let per_baseline = started.elapsed() / rounds;

    let empty = HookBus::default();
    let started = Instant::now();
    runtime.block_on(async {
        for _ in 0..rounds {
            std::hint::black_box(&payload);
            if !std::hint::black_box(&empty).is_empty() {
                empty.dispatch(HookEvent::PreToolUse, &payload, Some("shell"), &dir, &cancel).await;
            }
        }
    });
    let per_empty = started.elapsed() / rounds;

    let secrets = match ProtectSecrets::new(&[]) {
        Ok(hook) => hook,
        Err(error) => return eprintln_and_exit(&error.to_string()),
    };
    let native = HookBus::default().with_native(Arc::new(secrets));
    let read = HookPayload {
        tool_name: Some("read_file".into()),
        tool_input: Some(serde_json::json!({"path": "src/main.rs"})),
        ..HookPayload::default()
    };
    let native_rounds = 200_000u32;
    let started = Instant::now();
    runtime.block_on(async {
        for _ in 0..native_rounds {
            let bus = std::hint::black_box(&native);
            bus.dispatch(HookEvent::PreToolUse, &read, Some("read_file"), &dir, &cancel).await;
        }
    });
    let per_native = started.elapsed() / native_rounds;

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
    report(per_baseline, per_empty, per_native, per_hook);
}

#[allow(clippy::print_stdout)]
fn report(baseline: Duration, empty: Duration, native: Duration, hook: Duration) {
    println!("loop without a hook bus (baseline): {} ns per event", baseline.as_nanos());
    println!("hook dispatch, no hooks configured: {} ns per event", empty.as_nanos());
    println!("hook dispatch, native protect_secrets only: {} ns per event", native.as_nanos());
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
