//! The harness tools' arguments in the shape Claude Code's own tools take
//! them, for hooks from Claude settings: `todo_write` is Claude's
//! `TodoWrite` (`todos[].content`, `activeForm`), `submit_plan` its
//! `ExitPlanMode` (`plan`), `ask_user` its `AskUserQuestion`
//! (`questions[].question`, `options[].label`). [`to_claude`] shapes the
//! `tool_input` a hook reads; [`from_claude`] reads a hook's
//! `updatedInput` back into keel's argument names.
//!
//! Invariants: pure; input of another shape (a model's malformed call, a
//! hook's own idea) passes through unchanged rather than failing here, so
//! the tool's own parser says what is wrong; keel's extra fields (a task's
//! `id`) are kept.

use serde_json::{Map, Value, json};

use crate::protocol::tool_facts::names;

/// `input` of keel's `tool` as Claude Code's tool takes it.
pub fn to_claude(tool: &str, input: &Value) -> Option<Value> {
    let object = input.as_object()?;
    match tool {
        names::TODO_WRITE => {
            let todos = object.get("todos")?.as_array()?;
            let todos: Vec<Value> = todos.iter().map(claude_task).collect();
            Some(with(object, "todos", Value::Array(todos)))
        }
        names::SUBMIT_PLAN => {
            let mut renamed = object.clone();
            let plan = renamed.remove("plan_markdown")?;
            renamed.insert("plan".into(), plan);
            Some(Value::Object(renamed))
        }
        names::ASK_USER => {
            let question = object.get("question")?.clone();
            let options: Vec<Value> = object
                .get("choices")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|choice| json!({ "label": choice }))
                .collect();
            Some(json!({"questions": [{
                "question": question,
                "options": options,
                "multiSelect": false,
            }]}))
        }
        _ => None,
    }
}

/// A Claude-shaped `input` for keel's `tool` in keel's argument names.
pub fn from_claude(tool: &str, input: Value) -> Value {
    let Value::Object(object) = input else { return input };
    match tool {
        names::TODO_WRITE => {
            let Some(Value::Array(todos)) = object.get("todos") else {
                return Value::Object(object);
            };
            let todos: Vec<Value> = todos.iter().map(keel_task).collect();
            with(&object, "todos", Value::Array(todos))
        }
        names::SUBMIT_PLAN if !object.contains_key("plan_markdown") => {
            let mut renamed = object;
            if let Some(plan) = renamed.remove("plan") {
                renamed.insert("plan_markdown".into(), plan);
            }
            Value::Object(renamed)
        }
        names::ASK_USER if !object.contains_key("question") => {
            let first = object.get("questions").and_then(|q| q.get(0)).cloned();
            let Some(first) = first else { return Value::Object(object) };
            let choices: Vec<Value> = first
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|option| option.get("label").cloned())
                .collect();
            json!({ "question": first.get("question"), "choices": choices })
        }
        _ => Value::Object(object),
    }
}

/// `object` with `key` set to `value`.
fn with(object: &Map<String, Value>, key: &str, value: Value) -> Value {
    let mut object = object.clone();
    object.insert(key.to_owned(), value);
    Value::Object(object)
}

/// One task as Claude's `TodoWrite` has it: `content`, and `activeForm`
/// (keel keeps no second wording, so the same text).
fn claude_task(task: &Value) -> Value {
    let Some(object) = task.as_object() else { return task.clone() };
    let mut renamed = object.clone();
    if let Some(text) = renamed.remove("text") {
        renamed.entry("activeForm").or_insert_with(|| text.clone());
        renamed.insert("content".into(), text);
    }
    Value::Object(renamed)
}

fn keel_task(task: &Value) -> Value {
    let Some(object) = task.as_object() else { return task.clone() };
    let mut renamed = object.clone();
    renamed.remove("activeForm");
    if !renamed.contains_key("text")
        && let Some(content) = renamed.remove("content")
    {
        renamed.insert("text".into(), content);
    }
    Value::Object(renamed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn todo_write_reads_as_claudes_todowrite_and_comes_back() {
        let keel = json!({"todos": [{"id": "1", "text": "parse", "status": "in_progress"}]});
        let claude = to_claude(names::TODO_WRITE, &keel).unwrap();
        assert_eq!(
            claude,
            json!({"todos": [{"id": "1", "content": "parse", "activeForm": "parse",
                "status": "in_progress"}]})
        );
        assert_eq!(from_claude(names::TODO_WRITE, claude), keel);
    }

    #[test]
    fn submit_plan_and_ask_user_take_claudes_field_names() {
        let plan = json!({"plan_markdown": "1. do it"});
        let claude = to_claude(names::SUBMIT_PLAN, &plan).unwrap();
        assert_eq!(claude, json!({"plan": "1. do it"}));
        assert_eq!(from_claude(names::SUBMIT_PLAN, claude), plan);
        let ask = json!({"question": "Which?", "choices": ["a", "b"]});
        let claude = to_claude(names::ASK_USER, &ask).unwrap();
        assert_eq!(claude["questions"][0]["question"], "Which?");
        assert_eq!(claude["questions"][0]["options"][1]["label"], "b");
        assert_eq!(from_claude(names::ASK_USER, claude), ask);
    }

    #[test]
    fn other_shapes_pass_through() {
        let odd = json!({"todos": "not a list"});
        assert_eq!(to_claude(names::TODO_WRITE, &odd), None);
        assert_eq!(from_claude(names::TODO_WRITE, odd.clone()), odd);
        assert_eq!(to_claude(names::READ_FILE, &json!({"path": "a"})), None);
        assert_eq!(from_claude(names::ASK_USER, json!([1])), json!([1]));
    }
}
