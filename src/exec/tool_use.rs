//! `no_tool_call`: a task sent to a server on this machine that came back
//! answered in text, without one tool call. Local servers drop the tools in
//! silence (a chat template without them, llama-cpp-python without
//! `tool_choice`, vLLM without `--enable-auto-tool-choice`) and the model
//! then answers a request to fix a file with prose: nothing was read or
//! changed, and `completed` would hide it.
//!
//! When: the turn completed, no response of it had a tool call (keel
//! always offers tools), the server is on this machine
//! (`ServerProfile::local_server`), and the prompt asks for work rather
//! than a question ([`asks_for_work`]). Cloud servers pass tools on; their
//! models answering in text is their choice, so they stay `completed`.
//!
//! Invariants: pure (strings in, a verdict out). The verdict is a guess
//! from the prompt's wording, so it never fails a run: the status is
//! `no_tool_call` with exit 0 and the warning says why and what usually
//! causes it for the detected server.

use crate::llm::LocalServer;

/// First words of a prompt that asks a question or greets (lowercase).
const QUESTION_WORDS: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "good",
    "greet",
    "say",
    "tell",
    "thank",
    "thanks",
    "what",
    "why",
    "how",
    "who",
    "which",
    "where",
    "when",
    "explain",
    "describe",
    "summarize",
    "summarise",
];

/// Whether `prompt` asks for work (a change, a run, a search) rather than
/// an answer: it does not end with `?` and does not start with a question
/// word or a greeting (`what does calc.py do` is a question, `hello` and
/// `say hello in one sentence` greetings, `tell me about…` a request for
/// an answer, `fix calc.py` work).
pub fn asks_for_work(prompt: &str) -> bool {
    let prompt = prompt.trim();
    if prompt.is_empty() || prompt.ends_with('?') {
        return false;
    }
    let first = prompt
        .split(|c: char| !c.is_alphanumeric())
        .find(|word| !word.is_empty())
        .unwrap_or("")
        .to_lowercase();
    !QUESTION_WORDS.contains(&first.as_str())
}

/// The warning of a `no_tool_call` run, naming the usual cause.
pub fn no_tool_call_warning(server: LocalServer) -> String {
    format!(
        "the model answered without using any tool, though the prompt asks for work and keel \
         offered its tools: nothing was read, run or changed. Usually the server did not pass \
         the tools to the model: {}; a very small model may also not call tools at all",
        server.tool_advice()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_told_from_work() {
        for question in [
            "what does calc.py do?",
            "What does calc.py do",
            "Explain the bug in calc.py",
            "  why is the test failing  ",
            "can you fix calc.py?",
            "hello",
            "Say hello in one short sentence.",
            "tell me about this repository",
            "Good morning",
            "",
        ] {
            assert!(!asks_for_work(question), "{question:?}");
        }
        for work in ["fix the bug in calc.py", "Add a test for add()", "rename foo to bar."] {
            assert!(asks_for_work(work), "{work:?}");
        }
    }

    #[test]
    fn the_warning_names_the_servers_flag() {
        assert!(no_tool_call_warning(LocalServer::LlamaCpp).contains("--jinja"));
        assert!(
            no_tool_call_warning(LocalServer::LlamaCppPythonOrVllm)
                .contains("chatml-function-calling")
        );
    }
}
