//! Issue 39: Ctrl+V in the TUI attaches the clipboard's image, read with
//! the desktop's clipboard tool (`wl-paste` here: a stand-in on `PATH`
//! that prints a PNG, with `WAYLAND_DISPLAY` set); the model receives its
//! bytes. Without a tool the hint says what to install or do instead.
//! Driven in the real binary in a tmux pane; every wait is on the screen.

use std::os::unix::fs::PermissionsExt;

use super::images_e2e::{images_in, png};
use super::support::{Sandbox, request_bodies, scripted_model};
use super::tmux_support::{Launch, launch_with, shell_quote};
use super::wire::{Step, Wire};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_v_attaches_the_clipboard_s_image_and_the_model_receives_it() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.home.join("config.toml"), "[provider]\nimages = true\n").unwrap();
    let tools = sandbox.home.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let shot = png(24, 16);
    std::fs::write(tools.join("clip.png"), &shot).unwrap();
    let script = format!(
        "#!/bin/sh\ncase \"$1\" in --list-types) printf 'text/plain\\nimage/png\\n' ;; \
         *) cat {} ;; esac\n",
        shell_quote(&tools.join("clip.png").display().to_string())
    );
    std::fs::write(tools.join("wl-paste"), script).unwrap();
    std::fs::set_permissions(tools.join("wl-paste"), std::fs::Permissions::from_mode(0o755))
        .unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("A small gradient.".into())]).await;
    let path = format!("{}:{}", tools.display(), std::env::var("PATH").unwrap_or_default());
    let env = format!("PATH={} WAYLAND_DISPLAY=wayland-test", shell_quote(&path));
    let pane = launch_with(&sandbox, &server.uri(), &Launch { env: &env, ..Launch::default() });
    pane.wait_for(&["Ask keel"]);
    pane.keys(&["C-v"]);
    pane.wait_for(&["attached [image: clipboard"]);
    pane.type_text("what is this");
    pane.wait_for(&["│what is this"]);
    pane.keys(&["Enter"]);
    pane.wait_for(&["A small gradient."]);
    let body = request_bodies(&server).await.remove(0);
    assert_eq!(images_in(&body), vec![("image/png".to_owned(), shot)]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_v_without_a_clipboard_tool_says_what_to_do() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("never".into())]).await;
    // No display variable: no tool is looked for.
    let pane = launch_with(&sandbox, &server.uri(), &Launch::default());
    pane.wait_for(&["Ask keel"]);
    pane.keys(&["C-v"]);
    pane.wait_for(&["no clipboard tool"]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}
