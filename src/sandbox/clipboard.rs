//! The user's clipboard image, for the TUI's Ctrl+V: read with the
//! desktop's own clipboard tool, `wl-paste` under Wayland
//! (`WAYLAND_DISPLAY`) or `xclip` under X11 (`DISPLAY`), first asked which
//! types it holds, then for the first image type keel sends (PNG, JPEG,
//! GIF, WebP).
//!
//! It runs as the user, not the model (the user pressed the key), so it
//! is not judged by policy and not jailed: it must reach the display
//! server's socket. Invariants: the tool is looked up on `PATH` in absolute
//! folders outside the workspace only (a repository cannot plant an
//! `xclip` that keel runs); it gets only `PATH`, `HOME`, the display
//! variables and the locale, no credentials; its output is read no further
//! than [`MAX_BYTES`], and a tool that does not answer in [`TIMEOUT`] is
//! killed. Nothing here decodes the image (`support::images` does).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::AsyncReadExt as _;

/// The most a clipboard read takes (the image limit of `support::images`).
pub const MAX_BYTES: u64 = 50 * 1024 * 1024;
/// How long the tool may take to answer.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// The image types keel sends, in the order it prefers them.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Variables the tool gets besides `PATH` and `HOME`.
const PASSED: [&str; 7] =
    ["WAYLAND_DISPLAY", "DISPLAY", "XDG_RUNTIME_DIR", "XAUTHORITY", "LANG", "LC_ALL", "USER"];

/// Why no image came from the clipboard.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ClipboardError {
    #[error(
        "no clipboard tool: keel reads images with `wl-paste` (Wayland, package wl-clipboard) \
         or `xclip` (X11), and neither is on PATH outside the workspace with a display set; \
         save the image and paste its path instead"
    )]
    NoTool,
    #[error("the clipboard holds no image (it has: {held})")]
    NoImage { held: String },
    #[error("`{tool}` failed: {reason}")]
    Tool { tool: &'static str, reason: String },
    #[error("the clipboard's image is larger than {} MB", MAX_BYTES >> 20)]
    TooLarge,
}

/// Where the tool is looked for and what it gets: read from keel's own
/// environment once, at the key press ([`Desktop::current`]).
#[derive(Debug, Clone)]
pub struct Desktop {
    /// `PATH`'s folders.
    pub path: Vec<PathBuf>,
    /// The workspace, whose folders are never searched.
    pub workspace: PathBuf,
    /// The tool's environment.
    pub env: Vec<(OsString, OsString)>,
}

impl Desktop {
    pub fn current(workspace: &Path) -> Self {
        let path = std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).collect())
            .unwrap_or_default();
        let env = std::env::vars_os()
            .filter(|(name, _)| {
                name.to_str()
                    .is_some_and(|name| name == "PATH" || name == "HOME" || PASSED.contains(&name))
            })
            .collect();
        Self { path, workspace: workspace.to_owned(), env }
    }

    fn has(&self, name: &str) -> bool {
        self.env.iter().any(|(key, value)| key == name && !value.is_empty())
    }

    /// `program` on `PATH`: absolute folders outside the workspace only.
    fn find(&self, program: &str) -> Option<PathBuf> {
        let workspace = self.workspace.canonicalize().unwrap_or_else(|_| self.workspace.clone());
        self.path.iter().filter(|folder| folder.is_absolute()).find_map(|folder| {
            let real = folder.canonicalize().ok()?;
            if real.starts_with(&workspace) {
                return None;
            }
            let candidate = real.join(program);
            is_executable(&candidate).then_some(candidate)
        })
    }

    /// The clipboard tool this desktop has: Wayland's first.
    fn tool(&self) -> Option<(Tool, PathBuf)> {
        let wayland = self.has("WAYLAND_DISPLAY").then(|| self.find("wl-paste"));
        if let Some(Some(path)) = wayland {
            return Some((Tool::WlPaste, path));
        }
        let x11 = self.has("DISPLAY").then(|| self.find("xclip"));
        x11.flatten().map(|path| (Tool::Xclip, path))
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    WlPaste,
    Xclip,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::WlPaste => "wl-paste",
            Tool::Xclip => "xclip",
        }
    }

    fn list_types(self) -> &'static [&'static str] {
        match self {
            Tool::WlPaste => &["--list-types"],
            Tool::Xclip => &["-selection", "clipboard", "-t", "TARGETS", "-o"],
        }
    }

    fn read(self, media_type: &str) -> Vec<String> {
        let media_type = media_type.to_owned();
        match self {
            Tool::WlPaste => vec!["--no-newline".into(), "--type".into(), media_type],
            Tool::Xclip => ["-selection", "clipboard", "-t"]
                .map(str::to_owned)
                .into_iter()
                .chain([media_type, "-o".into()])
                .collect(),
        }
    }
}

/// The clipboard's image bytes, as the tool gave them.
pub async fn read_image(desktop: &Desktop) -> Result<Vec<u8>, ClipboardError> {
    let (tool, program) = desktop.tool().ok_or(ClipboardError::NoTool)?;
    let listing = run(tool, &program, tool.list_types(), desktop, 64 * 1024).await?;
    let listing = String::from_utf8_lossy(&listing);
    let held: Vec<&str> = listing.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let Some(media_type) = IMAGE_TYPES.iter().find(|wanted| held.contains(wanted)) else {
        let held = if held.is_empty() { "nothing".to_owned() } else { held.join(", ") };
        return Err(ClipboardError::NoImage { held });
    };
    let bytes = run(tool, &program, &tool.read(media_type), desktop, MAX_BYTES).await?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(ClipboardError::TooLarge);
    }
    Ok(bytes)
}

/// Runs the tool; its stdout, read no further than `cap` + 1 bytes.
async fn run(
    tool: Tool,
    program: &Path,
    args: &[impl AsRef<std::ffi::OsStr>],
    desktop: &Desktop,
    cap: u64,
) -> Result<Vec<u8>, ClipboardError> {
    let failed = |reason: String| ClipboardError::Tool { tool: tool.name(), reason };
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .env_clear()
        .envs(desktop.env.iter().cloned())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| failed(error.to_string()))?;
    let mut stdout = child.stdout.take().ok_or_else(|| failed("no stdout".into()))?;
    let mut stderr = child.stderr.take().ok_or_else(|| failed("no stderr".into()))?;
    let work = async {
        let mut bytes = Vec::new();
        let mut said = Vec::new();
        let mut out = (&mut stdout).take(cap + 1);
        let mut err = (&mut stderr).take(4096);
        let (read, _) = tokio::join!(out.read_to_end(&mut bytes), err.read_to_end(&mut said));
        read.map_err(|error| failed(error.to_string()))?;
        let status = child.wait().await.map_err(|error| failed(error.to_string()))?;
        if status.success() || bytes.len() as u64 > cap {
            return Ok(bytes);
        }
        let said = String::from_utf8_lossy(&said).trim().to_owned();
        Err(failed(if said.is_empty() { status.to_string() } else { said }))
    };
    match tokio::time::timeout(TIMEOUT, work).await {
        Ok(result) => result,
        Err(_) => Err(failed(format!("no answer in {} s", TIMEOUT.as_secs()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder with a fake tool `name` running `script`.
    fn fake_tool(folder: &Path, name: &str, script: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        let path = folder.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn desktop(path: &[&Path], workspace: &Path, vars: &[(&str, &str)]) -> Desktop {
        let mut env: Vec<(OsString, OsString)> =
            vars.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))).collect();
        env.push(("PATH".into(), "/usr/bin:/bin".into()));
        Desktop {
            path: path.iter().map(|p| p.to_path_buf()).collect(),
            workspace: workspace.into(),
            env,
        }
    }

    /// A wl-paste that lists `types` and prints `body` for a `--type`.
    const WL_PASTE: &str = r#"case "$1" in --list-types) printf 'text/plain\nimage/png\n' ;; *) printf 'PNGBYTES:%s' "$3" ;; esac"#;

    #[tokio::test]
    async fn wayland_s_tool_is_asked_for_the_types_then_for_the_image() {
        let tools = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        fake_tool(tools.path(), "wl-paste", WL_PASTE);
        let desktop =
            desktop(&[tools.path()], workspace.path(), &[("WAYLAND_DISPLAY", "wayland-0")]);
        assert_eq!(read_image(&desktop).await.unwrap(), b"PNGBYTES:image/png");
    }

    #[tokio::test]
    async fn x11_s_xclip_is_used_when_there_is_no_wayland() {
        let tools = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        fake_tool(tools.path(), "wl-paste", "echo never; exit 1");
        let xclip = r#"case "$4" in TARGETS) printf 'TARGETS\nimage/jpeg\n' ;; *) printf 'JPEG:%s' "$4" ;; esac"#;
        fake_tool(tools.path(), "xclip", xclip);
        let desktop = desktop(&[tools.path()], workspace.path(), &[("DISPLAY", ":0")]);
        assert_eq!(read_image(&desktop).await.unwrap(), b"JPEG:image/jpeg");
    }

    #[tokio::test]
    async fn a_tool_planted_in_the_workspace_is_never_run() {
        let workspace = tempfile::tempdir().unwrap();
        let planted = workspace.path().join("bin");
        std::fs::create_dir(&planted).unwrap();
        let proof = workspace.path().join("ran");
        fake_tool(&planted, "wl-paste", &format!("touch {}", proof.display()));
        let relative = Path::new("bin");
        let desktop =
            desktop(&[relative, &planted], workspace.path(), &[("WAYLAND_DISPLAY", "wayland-0")]);
        assert_eq!(read_image(&desktop).await, Err(ClipboardError::NoTool));
        assert!(!proof.exists());
        assert!(ClipboardError::NoTool.to_string().contains("save the image and paste its path"));
    }

    #[tokio::test]
    async fn no_image_no_display_and_a_failing_or_silent_tool_are_said() {
        let tools = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        fake_tool(tools.path(), "wl-paste", r#"[ "$1" = --list-types ] && echo text/plain"#);
        let wayland = [("WAYLAND_DISPLAY", "wayland-0")];
        let text_only = desktop(&[tools.path()], workspace.path(), &wayland);
        let held = ClipboardError::NoImage { held: "text/plain".into() };
        assert_eq!(read_image(&text_only).await, Err(held));
        let headless = desktop(&[tools.path()], workspace.path(), &[]);
        assert_eq!(read_image(&headless).await, Err(ClipboardError::NoTool), "no display set");
        fake_tool(tools.path(), "wl-paste", "echo 'No selection' >&2; exit 1");
        let Err(ClipboardError::Tool { tool: "wl-paste", reason }) = read_image(&text_only).await
        else {
            panic!("a failing tool")
        };
        assert_eq!(reason, "No selection");
    }

    #[tokio::test]
    async fn the_tool_gets_only_the_desktop_s_variables() {
        let tools = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        fake_tool(tools.path(), "wl-paste", r#"[ "$1" = --list-types ] && echo image/png || env"#);
        let desktop = desktop(&[tools.path()], workspace.path(), &[("WAYLAND_DISPLAY", "w")]);
        let env = String::from_utf8(read_image(&desktop).await.unwrap()).unwrap();
        let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
        assert!(names.iter().all(|n| ["WAYLAND_DISPLAY", "PATH", "PWD"].contains(n)), "{env}");
        // What `current` takes from keel's environment: only those names.
        let current = Desktop::current(workspace.path());
        assert!(current.env.iter().all(|(name, _)| {
            let name = name.to_string_lossy();
            name == "PATH" || name == "HOME" || PASSED.contains(&name.as_ref())
        }));
    }
}
