//! Which model names a provider serves, for the `model:` a command or an
//! agent file names (written, often, for another tool's provider).
//!
//! Rule (README, "Commands"): `inherit` is the session's model; Claude's
//! aliases `sonnet`/`opus`/`haiku` and `claude-*` names are served by the
//! Anthropic API only; `gpt-*`, `chatgpt-*`, `codex-*`, fine-tunes (`ft:`) and the o-series
//! (`o1`, `o3`, `o4`, …) by the OpenAI APIs only; any other name only by a
//! server at a custom base URL (a local or compatible server names its
//! models freely; the providers' own hosts serve none of them). A name
//! the provider does not serve is `Foreign`: the caller says so once and
//! keeps the session's model, never sending a request priced as a model
//! that cannot answer it.
//!
//! Pure: no I/O; a fact about names, kept in this one place.

use super::ProviderKind;

/// Claude's aliases, as the Anthropic model ids they name now.
const CLAUDE_ALIASES: [(&str, &str); 3] =
    [("sonnet", "claude-sonnet-4-5"), ("opus", "claude-opus-4-5"), ("haiku", "claude-haiku-4-5")];

/// What a file's `model:` comes to on one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelChoice {
    /// The session's model (`inherit`).
    Session,
    /// This model id, which the provider serves.
    Model(String),
    /// A model of a family the provider does not serve.
    Foreign,
}

/// The family a name belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Claude,
    OpenAi,
    Other,
}

fn family(name: &str) -> Family {
    let lower = name.to_ascii_lowercase();
    if lower.starts_with("claude-") || CLAUDE_ALIASES.iter().any(|(alias, _)| *alias == lower) {
        return Family::Claude;
    }
    let o_series = lower.strip_prefix('o').is_some_and(|rest| {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        digits > 0 && rest[digits..].chars().next().is_none_or(|c| c == '-')
    });
    if o_series || ["gpt-", "chatgpt-", "codex-", "ft:"].iter().any(|p| lower.starts_with(p)) {
        return Family::OpenAi;
    }
    Family::Other
}

/// What `requested` comes to on `kind`; `custom_base_url`: the session
/// talks to a server other than the provider's own host.
pub fn choose_model(kind: ProviderKind, custom_base_url: bool, requested: &str) -> ModelChoice {
    if requested.eq_ignore_ascii_case("inherit") {
        return ModelChoice::Session;
    }
    let anthropic = kind == ProviderKind::Anthropic;
    match family(requested) {
        Family::Claude if anthropic => {
            let alias =
                CLAUDE_ALIASES.iter().find(|(alias, _)| alias.eq_ignore_ascii_case(requested));
            ModelChoice::Model(alias.map_or(requested, |(_, id)| id).to_owned())
        }
        Family::OpenAi if !anthropic => ModelChoice::Model(requested.to_owned()),
        Family::Other if custom_base_url => ModelChoice::Model(requested.to_owned()),
        _ => ModelChoice::Foreign,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAT: ProviderKind = ProviderKind::OpenAiChat;
    const CLAUDE: ProviderKind = ProviderKind::Anthropic;

    fn model(name: &str) -> ModelChoice {
        ModelChoice::Model(name.to_owned())
    }

    #[test]
    fn claude_names_are_served_on_anthropic_only() {
        assert_eq!(choose_model(CLAUDE, false, "claude-sonnet-4-0"), model("claude-sonnet-4-0"));
        assert_eq!(choose_model(CLAUDE, false, "opus"), model("claude-opus-4-5"));
        assert_eq!(choose_model(CLAUDE, true, "haiku"), model("claude-haiku-4-5"));
        for kind in [CHAT, ProviderKind::OpenAiResponses] {
            for custom in [false, true] {
                assert_eq!(choose_model(kind, custom, "claude-sonnet-4-0"), ModelChoice::Foreign);
                assert_eq!(choose_model(kind, custom, "sonnet"), ModelChoice::Foreign);
            }
        }
    }

    #[test]
    fn openai_names_are_served_on_openai_apis_only() {
        for name in ["gpt-5-mini", "o3", "o4-mini", "o1", "codex-mini-latest"] {
            assert_eq!(choose_model(ProviderKind::OpenAiResponses, false, name), model(name));
            assert_eq!(choose_model(CHAT, true, name), model(name));
            assert_eq!(choose_model(CLAUDE, false, name), ModelChoice::Foreign, "{name}");
        }
    }

    #[test]
    fn other_names_reach_a_custom_server_only_and_inherit_is_the_sessions() {
        assert_eq!(choose_model(CHAT, true, "qwen3:8b"), model("qwen3:8b"));
        assert_eq!(choose_model(CHAT, false, "qwen3:8b"), ModelChoice::Foreign);
        assert_eq!(choose_model(CLAUDE, false, "ollama-thing"), ModelChoice::Foreign);
        assert_eq!(choose_model(CHAT, true, "o3x"), model("o3x"), "not the o-series");
        assert_eq!(choose_model(CLAUDE, false, "inherit"), ModelChoice::Session);
    }
}
