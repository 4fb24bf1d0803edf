//! Hook dispatch cost, measured in the same run: a loop with no hook bus at
//! all (the baseline), an empty bus (no hooks configured: the `listens`
//! check callers make), keel's default bus (the native `protect_secrets`
//! hook) on an event it does not listen to and on a `read_file` call, and
//! a trivial subprocess hook.
//!
//! Run: `cargo bench --bench hooks`.

use std::sync::Arc;
use std::time::Instant;

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
    let per_baseline = started.elapsed().as_secs_f64() / f64::from(rounds);

    let empty = HookBus::default();
    let started = Instant::now();
    runtime.block_on(async {
        for _ in 0..rounds {
            std::hint::black_box(&payload);
            if std::hint::black_box(&empty).listens(HookEvent::PreToolUse) {
                empty.dispatch(HookEvent::PreToolUse, &payload, Some("shell"), &dir, &cancel).await;
            }
        }
    });
    let per_empty = started.elapsed().as_secs_f64() / f64::from(rounds);

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
    // keel's default: protect_secrets listens to PreToolUse only, so
    // every other event costs what an empty bus costs.
    let started = Instant::now();
    runtime.block_on(async {
        for _ in 0..rounds {
            std::hint::black_box(&payload);
            if std::hint::black_box(&native).listens(HookEvent::Stop) {
                native.dispatch(HookEvent::Stop, &payload, None, &dir, &cancel).await;
            }
        }
    });
    let per_unheard = started.elapsed().as_secs_f64() / f64::from(rounds);

    let native_rounds = 200_000u32;
    let started = Instant::now();
    runtime.block_on(async {
        for _ in 0..native_rounds {
            let bus = std::hint::black_box(&native);
            bus.dispatch(HookEvent::PreToolUse, &read, Some("read_file"), &dir, &cancel).await;
        }
    });
    let per_native = started.elapsed().as_secs_f64() / f64::from(native_rounds);

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
    let per_hook = started.elapsed().as_secs_f64() / f64::from(runs);
    report([per_baseline, per_empty, per_unheard, per_native, per_hook]);
}

/// Seconds per event: baseline, empty bus, native bus on an event it does
/// not listen to, native protect_secrets, subprocess hook.
#[allow(clippy::print_stdout)]
fn report([baseline, empty, unheard, native, hook]: [f64; 5]) {
    println!("loop without a hook bus (baseline): {:.2} ns per event", baseline * 1e9);
    println!("hook dispatch, no hooks configured: {:.2} ns per event", empty * 1e9);
    println!("hook dispatch, default (native) bus, Stop event: {:.2} ns per event", unheard * 1e9);
    println!("hook dispatch, native protect_secrets on a read: {:.0} ns per event", native * 1e9);
    println!("hook dispatch, one `true` subprocess hook: {:.2} ms per event", hook * 1e3);
}

#[allow(clippy::print_stderr)]
fn eprintln_and_exit(message: &str) {
    eprintln!("bench failed: {message}");
    std::process::exit(1);
}
