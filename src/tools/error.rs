//! [`ToolError`]: every way a tool call can fail, worded for the model.
//!
//! Invariants: messages are lowercase and say what to do next; paths in
//! messages are as the model knows them (relative to the workspace where
//! possible); every variant has a stable `kind` string for the result's
//! metadata, so front ends and the log need not parse messages.

use std::path::{Path, PathBuf};

use super::apply_patch::{PatchError, SeekError};
use super::file_state::Freshness;
use crate::protocol::ToolMeta;
use crate::sandbox::SandboxError;

/// A tool failure meant for the model to read.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments for {tool}: {message}")]
    InvalidArguments { tool: String, message: String },
    #[error("unknown tool `{name}`; available tools: {}", available.join(", "))]
    UnknownTool { name: String, available: Vec<String> },
    #[error(
        "{} is outside the workspace {}; only paths inside the workspace can be used",
        path.display(), root.display()
    )]
    OutsideWorkspace { path: PathBuf, root: PathBuf },
    #[error("{} does not exist; check the path with list_dir or glob", path.display())]
    NotFound { path: PathBuf },
    #[error("{} is a directory; use list_dir to see its entries", path.display())]
    IsADirectory { path: PathBuf },
    #[error("{} is not a directory", path.display())]
    NotADirectory { path: PathBuf },
    #[error("{} looks like a binary file (it contains NUL bytes) and cannot be shown as text", path.display())]
    BinaryFile { path: PathBuf },
    #[error("{} looks like an image but cannot be read as one: {reason}", path.display())]
    BadImage { path: PathBuf, reason: String },
    #[error("{} is not valid UTF-8 text, so it cannot be edited as a string", path.display())]
    NotUtf8 { path: PathBuf },
    #[error("{} is a symlink whose target does not exist", path.display())]
    DanglingSymlink { path: PathBuf },
    #[error(
        "{} is a {kind}, not a regular file; the file tools only read and write regular files",
        path.display()
    )]
    NotRegularFile { path: PathBuf, kind: &'static str },
    #[error(
        "{} changed while keel was using it (a folder on the way was replaced by a symlink or \
         a file); nothing was read or written. check the path with list_dir and try again",
        path.display()
    )]
    PathChanged { path: PathBuf },
    #[error(
        "{} is {bytes} bytes; the file tools edit files up to {limit} bytes. use a shell \
         command (sed, a script) for a file this large",
        path.display()
    )]
    FileTooLarge { path: PathBuf, bytes: u64, limit: u64 },
    #[error(
        "offset {offset} is past the end of {}, which has {total_lines} lines",
        path.display()
    )]
    OffsetPastEnd { path: PathBuf, offset: u64, total_lines: u64 },
    #[error("permission denied on {}", path.display())]
    PermissionDenied { path: PathBuf },
    #[error("{}", conflict_message(path, *freshness))]
    Conflict { path: PathBuf, freshness: Freshness },
    #[error("in {}: {source}", path.display())]
    PatchContext {
        path: PathBuf,
        #[source]
        source: SeekError,
    },
    #[error("{0}")]
    Patch(Box<PatchError>),
    #[error("i/o error on {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "old_string was not found in {}; re-read the file with read_file and copy the text \
         exactly, whitespace included{}",
        path.display(), hint.as_deref().map(|hint| format!(". {hint}")).unwrap_or_default()
    )]
    EditNotFound { path: PathBuf, hint: Option<String> },
    #[error(
        "old_string matches {count} places in {}; include more surrounding lines to make it \
         unique, or set replace_all to true to change every one",
        path.display()
    )]
    EditAmbiguous { path: PathBuf, count: usize },
    #[error("old_string is empty; to create or overwrite a whole file use write_file")]
    EmptyOldString,
    #[error("old_string and new_string are identical, so the edit would change nothing")]
    NoChange,
    #[error("invalid regex `{pattern}`: {source}")]
    InvalidRegex {
        pattern: String,
        #[source]
        source: grep_regex::Error,
    },
    #[error("invalid glob `{pattern}`: {source}")]
    InvalidGlob {
        pattern: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{source}")]
    Command {
        #[source]
        source: SandboxError,
    },
    #[error(
        "command timed out after {timeout_ms} ms and was killed; {advice}. output before the \
         timeout:\n{output}"
    )]
    Timeout { timeout_ms: u64, advice: String, output: String },
    #[error("cancelled by the user")]
    Cancelled,
    /// A command the user stopped while it ran, with what it had printed
    /// (framed as a shell result).
    #[error("cancelled by the user while it ran; its output until then:\n{output}")]
    Interrupted { output: String },
    #[error(
        "the {tool} tool failed unexpectedly (a bug in keel, not in your call): {message}; \
         nothing more is known about what it did, so check before retrying or try another way"
    )]
    Internal { tool: String, message: String },
    /// The front end (an ACP editor) failed to read or write a text file
    /// for the tool, or did not answer (`file_access.rs`).
    #[error(
        "the editor could not {action} {}: {message}; nothing more was done to the file by keel",
        path.display()
    )]
    Client { path: PathBuf, action: &'static str, message: String },
    #[error(
        "{} changed in the editor since it was last read (edits there, saved or not); re-read \
         it with read_file and redo the change on the current content",
        path.display()
    )]
    EditorChanged { path: PathBuf },
    /// A tool outside keel (an MCP server's) failed: it said so, timed
    /// out, or could not be reached. `kind` is the metadata's `kind`.
    #[error("{message}")]
    External { kind: &'static str, message: String },
    /// A background process could not be started, found or written to.
    #[error(transparent)]
    Process(#[from] super::processes::ProcessError),
}

impl ToolError {
    /// A stable name for the kind of failure, for metadata.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::UnknownTool { .. } => "unknown_tool",
            Self::OutsideWorkspace { .. } => "outside_workspace",
            Self::NotFound { .. } => "not_found",
            Self::IsADirectory { .. } => "is_a_directory",
            Self::NotADirectory { .. } => "not_a_directory",
            Self::BinaryFile { .. } => "binary_file",
            Self::BadImage { .. } => "bad_image",
            Self::NotUtf8 { .. } => "not_utf8",
            Self::DanglingSymlink { .. } => "dangling_symlink",
            Self::NotRegularFile { .. } => "not_a_regular_file",
            Self::PathChanged { .. } => "path_changed",
            Self::FileTooLarge { .. } => "file_too_large",
            Self::OffsetPastEnd { .. } => "offset_past_end",
            Self::PermissionDenied { .. } => "permission_denied",
            Self::Conflict { .. } => "conflict",
            Self::PatchContext { .. } => "patch_mismatch",
            Self::Patch(patch) => match patch.as_ref() {
                PatchError::Parse(_) => "invalid_patch",
                PatchError::Operation { source, .. } => source.kind(),
            },
            Self::Io { .. } => "io",
            Self::Client { .. } => "client_failed",
            Self::EditorChanged { .. } => "conflict",
            Self::EditNotFound { .. } => "edit_not_found",
            Self::EditAmbiguous { .. } => "edit_ambiguous",
            Self::EmptyOldString => "empty_old_string",
            Self::NoChange => "no_change",
            Self::InvalidRegex { .. } => "invalid_regex",
            Self::InvalidGlob { .. } => "invalid_glob",
            Self::Command { .. } => "command_failed",
            Self::Timeout { .. } => "timeout",
            Self::Cancelled | Self::Interrupted { .. } => "cancelled",
            Self::Internal { .. } => "internal",
            Self::External { kind, .. } => kind,
            Self::Process(error) => error.kind(),
        }
    }

    /// The path the error is about, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::OutsideWorkspace { path, .. }
            | Self::NotFound { path }
            | Self::IsADirectory { path }
            | Self::NotADirectory { path }
            | Self::BinaryFile { path }
            | Self::BadImage { path, .. }
            | Self::NotUtf8 { path }
            | Self::DanglingSymlink { path }
            | Self::NotRegularFile { path, .. }
            | Self::PathChanged { path }
            | Self::FileTooLarge { path, .. }
            | Self::OffsetPastEnd { path, .. }
            | Self::Io { path, .. }
            | Self::Client { path, .. }
            | Self::EditorChanged { path }
            | Self::PermissionDenied { path }
            | Self::Conflict { path, .. }
            | Self::PatchContext { path, .. }
            | Self::EditNotFound { path, .. }
            | Self::EditAmbiguous { path, .. } => Some(path),
            Self::Patch(patch) => match patch.as_ref() {
                PatchError::Parse(_) => None,
                PatchError::Operation { source, .. } => source.path(),
            },
            Self::InvalidArguments { .. }
            | Self::UnknownTool { .. }
            | Self::EmptyOldString
            | Self::NoChange
            | Self::InvalidRegex { .. }
            | Self::InvalidGlob { .. }
            | Self::Command { .. }
            | Self::Timeout { .. }
            | Self::Cancelled
            | Self::Interrupted { .. }
            | Self::Internal { .. }
            | Self::External { .. }
            | Self::Process(_) => None,
        }
    }

    /// Structured metadata for the error result: `{"error": kind, ...}`.
    pub fn meta(&self) -> ToolMeta {
        let mut meta = ToolMeta::tool_error(self.kind());
        if let Some(path) = self.path() {
            meta.insert("path", path.display().to_string());
        }
        if let Self::Timeout { timeout_ms, .. } = self {
            meta.set_timed_out(*timeout_ms);
        }
        if let Self::EditAmbiguous { count, .. } = self {
            meta.insert("count", *count);
        }
        if let Self::Patch(patch) = self
            && let PatchError::Operation { number, applied, .. } = patch.as_ref()
        {
            meta.insert("operation", *number);
            meta.insert("applied", applied.lines().lines().collect::<Vec<_>>());
        }
        meta
    }

    /// An i/o error on `path`, with "not found" given its own variant.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        match source.kind() {
            std::io::ErrorKind::NotFound => Self::NotFound { path },
            std::io::ErrorKind::IsADirectory => Self::IsADirectory { path },
            std::io::ErrorKind::NotADirectory => Self::NotADirectory { path },
            std::io::ErrorKind::PermissionDenied => Self::PermissionDenied { path },
            _ => Self::Io { path, source },
        }
    }
}

fn conflict_message(path: &Path, freshness: Freshness) -> String {
    let path = path.display();
    match freshness {
        Freshness::NotRead => format!(
            "{path} exists but has not been read in this session; read it with read_file first, \
             then write or edit it"
        ),
        Freshness::Changed | Freshness::Fresh => format!(
            "{path} changed on disk since it was last read (by the user or another program); \
             re-read it with read_file and redo the change on the current content"
        ),
    }
}

impl From<PatchError> for ToolError {
    fn from(error: PatchError) -> Self {
        Self::Patch(Box::new(error))
    }
}

impl From<SandboxError> for ToolError {
    fn from(source: SandboxError) -> Self {
        match source {
            SandboxError::Cancelled { .. } => Self::Cancelled,
            SandboxError::Spawn { .. } | SandboxError::Wait { .. } => Self::Command { source },
        }
    }
}
