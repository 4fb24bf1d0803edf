//! The JSON a hook reads on stdin (Claude Code's field names).
//!
//! Invariant: the fields Claude Code documents for an event are present
//! with Claude's values: `permission_mode` is one of `default`,
//! `acceptEdits`, `plan`, `bypassPermissions` ([`claude_permission_mode`];
//! keel's own mode name is `keel_mode`), tool events carry `tool_use_id`,
//! PostToolUseFailure carries `error`.

use serde_json::{Map, Value, json};

use super::HookEvent;
use super::claude_shape;
use super::config::claude_alias;
use crate::policy::PathLinks;
use crate::protocol::ApprovalMode;

/// Which tool names and argument keys a hook's command expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolNaming {
    /// keel's own names (`shell`, `path`).
    Keel,
    /// Claude Code's (`Bash`, `file_path`), for imported settings.
    Claude,
}

/// Everything a hook may be told about an event.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HookPayload {
    pub session_id: String,
    pub transcript_path: String,
    pub cwd: String,
    pub permission_mode: ApprovalMode,
    /// The call's id (Claude's `tool_use_id`), for tool events.
    pub tool_use_id: Option<String>,
    pub tool_name: Option<String>,
    pub tool_input: Option<Value>,
    pub tool_response: Option<Value>,
    /// SessionStart source (`startup`, `resume`, `compact`), the user's
    /// prompt, a phase, a notification message: event-specific fields.
    pub extra: Map<String, Value>,
    /// The symlinks on the way to the paths of `tool_input`, as the session
    /// found them; for native hooks (not sent to command hooks).
    pub path_links: PathLinks,
}

impl HookPayload {
    /// The stdin JSON for `event` in the given naming.
    pub fn to_json(&self, event: HookEvent, naming: ToolNaming) -> Value {
        let mut object = json!({
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": self.cwd,
            "hook_event_name": event.name(),
            "permission_mode": claude_permission_mode(self.permission_mode),
            "keel_mode": self.permission_mode.as_str(),
        });
        let Some(map) = object.as_object_mut() else { return object };
        if let Some(tool) = &self.tool_name {
            let name = match naming {
                ToolNaming::Keel => tool.as_str(),
                ToolNaming::Claude => claude_alias(tool).unwrap_or(tool),
            };
            map.insert("tool_name".into(), Value::String(name.to_owned()));
        }
        if let Some(id) = &self.tool_use_id {
            map.insert("tool_use_id".into(), Value::String(id.clone()));
        }
        if let Some(input) = &self.tool_input {
            let tool = self.tool_name.as_deref().unwrap_or_default();
            map.insert("tool_input".into(), rename_input(tool, input, naming));
        }
        if let Some(response) = &self.tool_response {
            map.insert("tool_response".into(), response.clone());
        }
        for (key, value) in &self.extra {
            map.insert(key.clone(), value.clone());
        }
        object
    }

    /// What `if` rules test: the command of a shell call, else its path.
    pub fn primary_argument(&self) -> Option<&str> {
        let input = self.tool_input.as_ref()?;
        ["command", "path", "file_path", "pattern"].iter().find_map(|key| input.get(key)?.as_str())
    }
}

/// Claude Code's name for the nearest of its permission modes: ask is its
/// `default`, auto (workspace writes without asking) `acceptEdits`, plan
/// and explore (read-only) `plan`, yolo `bypassPermissions`.
pub fn claude_permission_mode(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::Ask => "default",
        ApprovalMode::Auto => "acceptEdits",
        ApprovalMode::Plan | ApprovalMode::Explore => "plan",
        ApprovalMode::Yolo => "bypassPermissions",
    }
}

/// A hook's `updatedInput` for keel's `tool` in keel's argument names: a
/// Claude-dialect hook answers with Claude's `file_path`, which keel's
/// tools (and policy) read as `path`, and with Claude's shape of the
/// harness tools' arguments (`claude_shape`).
pub fn keel_input(tool: &str, input: Value, naming: ToolNaming) -> Value {
    if naming == ToolNaming::Claude && is_harness(tool) {
        return claude_shape::from_claude(tool, input);
    }
    match (naming, input) {
        (ToolNaming::Claude, Value::Object(mut map)) if !map.contains_key("path") => {
            if let Some(path) = map.remove("file_path") {
                map.insert("path".into(), path);
            }
            Value::Object(map)
        }
        (ToolNaming::Claude | ToolNaming::Keel, input) => input,
    }
}

/// Claude's file tools call the path `file_path`; its task, plan and
/// question tools take their own shapes (`claude_shape`).
fn rename_input(tool: &str, input: &Value, naming: ToolNaming) -> Value {
    if naming == ToolNaming::Claude
        && let Some(shaped) = claude_shape::to_claude(tool, input)
    {
        return shaped;
    }
    match (naming, input) {
        (ToolNaming::Claude, Value::Object(map)) if map.contains_key("path") => {
            let mut renamed = map.clone();
            if let Some(path) = renamed.remove("path") {
                renamed.insert("file_path".into(), path);
            }
            Value::Object(renamed)
        }
        (ToolNaming::Claude | ToolNaming::Keel, _) => input.clone(),
    }
}

fn is_harness(tool: &str) -> bool {
    crate::protocol::HarnessTool::parse(tool).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_naming_maps_tool_and_path() {
        let payload = HookPayload {
            tool_name: Some("write_file".into()),
            tool_input: Some(json!({"path": ".env", "content": "x"})),
            ..HookPayload::default()
        };
        let value = payload.to_json(HookEvent::PreToolUse, ToolNaming::Claude);
        assert_eq!(value["tool_name"], "Write");
        assert_eq!(value["tool_input"]["file_path"], ".env");
        assert_eq!(value["hook_event_name"], "PreToolUse");
        let value = payload.to_json(HookEvent::PreToolUse, ToolNaming::Keel);
        assert_eq!(value["tool_name"], "write_file");
        assert_eq!(value["tool_input"]["path"], ".env");
        assert_eq!(payload.primary_argument(), Some(".env"));
    }

    #[test]
    fn permission_mode_speaks_claudes_values_and_tool_events_carry_the_call_id() {
        let modes = [
            (ApprovalMode::Ask, "default"),
            (ApprovalMode::Auto, "acceptEdits"),
            (ApprovalMode::Plan, "plan"),
            (ApprovalMode::Explore, "plan"),
            (ApprovalMode::Yolo, "bypassPermissions"),
        ];
        for (mode, claude) in modes {
            let payload = HookPayload {
                permission_mode: mode,
                tool_use_id: Some("call_7".into()),
                tool_name: Some("shell".into()),
                ..HookPayload::default()
            };
            let value = payload.to_json(HookEvent::PreToolUse, ToolNaming::Claude);
            assert_eq!(value["permission_mode"], claude);
            assert_eq!(value["keel_mode"], mode.as_str());
            assert_eq!(value["tool_use_id"], "call_7");
        }
    }

    #[test]
    fn a_claude_hooks_updated_input_comes_back_in_keel_names() {
        let updated = json!({"file_path": "b.txt", "content": "x"});
        assert_eq!(
            keel_input("write_file", updated.clone(), ToolNaming::Claude),
            json!({"path": "b.txt", "content": "x"})
        );
        assert_eq!(keel_input("write_file", updated.clone(), ToolNaming::Keel), updated);
    }
}
