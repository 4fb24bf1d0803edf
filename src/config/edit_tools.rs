//! `[tools] edit`: which file-editing tool the model is offered. Models
//! edit best with the tool they were trained on: Claude with a string
//! replacement (`edit_file`, Claude Code's Edit), GPT models with
//! `apply_patch` (the only one Codex offers them). Offering both costs
//! every request ~200 tokens of a tool the model does not reach for.
//!
//! Invariant: [`EditTools::resolve`] never returns `Auto`, and every
//! choice offers at least one tool that changes part of a file.

use crate::llm::ProviderKind;
use crate::protocol::tool_facts::names;

/// The setting (`auto`, `edit_file`, `apply_patch`, `both`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EditTools {
    /// By the model's family when its name says it, else by protocol.
    #[default]
    Auto,
    EditFile,
    ApplyPatch,
    Both,
}

/// The tools this setting decides about; every other tool is offered as
/// before. They are one power: whoever may use one (an agent type) may
/// use the other, the one the session offers.
pub const EDIT_TOOLS: [&str; 2] = [names::EDIT_FILE, names::APPLY_PATCH];

impl EditTools {
    /// The values as written in the config file.
    pub const NAMES: [&'static str; 4] = ["auto", names::EDIT_FILE, names::APPLY_PATCH, "both"];

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "auto" => Some(Self::Auto),
            names::EDIT_FILE => Some(Self::EditFile),
            names::APPLY_PATCH => Some(Self::ApplyPatch),
            "both" => Some(Self::Both),
            _ => None,
        }
    }

    /// `Auto` decided for `model` on `provider`: a model name naming its
    /// family decides (`claude…` → `edit_file`; `gpt-…`, `o1`/`o3`/`o4…`,
    /// `codex…` → `apply_patch`; a router's `vendor/` prefix ignored);
    /// else the protocol: Anthropic serves Claude, the Responses API
    /// OpenAI's models, and a Chat Completions server any family (Qwen,
    /// Llama, DeepSeek, …), so it keeps both.
    pub fn resolve(self, provider: ProviderKind, model: &str) -> Self {
        if self != Self::Auto {
            return self;
        }
        let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
        if name.starts_with("claude") {
            return Self::EditFile;
        }
        let openai = ["gpt-", "o1", "o3", "o4", "codex"];
        if openai.iter().any(|prefix| name.starts_with(prefix)) {
            return Self::ApplyPatch;
        }
        match provider {
            ProviderKind::Anthropic => Self::EditFile,
            ProviderKind::OpenAiResponses => Self::ApplyPatch,
            ProviderKind::OpenAiChat => Self::Both,
        }
    }

    /// Whether a session with this (resolved) choice offers `tool`.
    pub fn offers(self, tool: &str) -> bool {
        match self {
            Self::Auto | Self::Both => true,
            Self::EditFile => tool != names::APPLY_PATCH,
            Self::ApplyPatch => tool != names::EDIT_FILE,
        }
    }

    /// The edit tools this choice offers, in the registry's order.
    pub fn offered(self) -> impl Iterator<Item = &'static str> {
        EDIT_TOOLS.into_iter().filter(move |tool| self.offers(tool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_follows_the_model_family_then_the_protocol() {
        let cases = [
            (ProviderKind::Anthropic, "claude-sonnet-4-5", EditTools::EditFile),
            (ProviderKind::Anthropic, "mock-model", EditTools::EditFile),
            (ProviderKind::OpenAiResponses, "gpt-5-codex", EditTools::ApplyPatch),
            (ProviderKind::OpenAiResponses, "mock-model", EditTools::ApplyPatch),
            (ProviderKind::OpenAiChat, "anthropic/claude-opus-4", EditTools::EditFile),
            (ProviderKind::OpenAiChat, "openai/gpt-5", EditTools::ApplyPatch),
            (ProviderKind::OpenAiChat, "o3-mini", EditTools::ApplyPatch),
            (ProviderKind::OpenAiChat, "qwen3-coder", EditTools::Both),
            // A named model on a protocol that does not serve it: the name wins.
            (ProviderKind::OpenAiResponses, "claude-haiku-4-5", EditTools::EditFile),
        ];
        for (provider, model, expected) in cases {
            assert_eq!(EditTools::Auto.resolve(provider, model), expected, "{provider:?} {model}");
        }
        assert_eq!(
            EditTools::Both.resolve(ProviderKind::Anthropic, "claude-x"),
            EditTools::Both,
            "a choice is kept"
        );
    }

    #[test]
    fn every_choice_offers_an_edit_tool_and_only_decides_about_edit_tools() {
        for name in EditTools::NAMES {
            let choice = EditTools::parse(name).unwrap();
            let resolved = choice.resolve(ProviderKind::OpenAiChat, "m");
            assert!(resolved.offered().count() >= 1, "{name}");
            assert!(resolved.offers("write_file") && resolved.offers("shell"), "{name}");
        }
        assert_eq!(EditTools::EditFile.offered().collect::<Vec<_>>(), ["edit_file"]);
        assert_eq!(EditTools::ApplyPatch.offered().collect::<Vec<_>>(), ["apply_patch"]);
        assert_eq!(EditTools::parse("patch"), None);
    }
}
