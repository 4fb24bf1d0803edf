//! The `provider` key: a protocol name (`provider = "openai-chat"`) or the
//! `[provider]` table, which names the protocol and says what the server
//! needs that keel cannot detect (README, "Servers"):
//!
//! ```toml
//! [provider]
//! name = "openai-chat"
//! reasoning_echo = "deepseek"   # auto | off | deepseek | always
//! prompt_cache_key = true       # send the session id as prompt_cache_key
//! cache_ttl = "1h"              # Anthropic cache writes: 5m (default) | 1h
//! api_key_header = "api-key"    # bearer (default) | api-key (Azure)
//! max_output_tokens = 1024      # default: a quarter of the window, at most 16384
//! stream = false                # unstreamed requests (openai-chat only)
//! images = true                 # the model takes images (default: known models only)
//! probe = true                  # ask a loopback server for its window (default: default ports)
//! strict_tools = true           # strict tool calling: schemas in the protocol's strict subset (default: off)
//! ```
//!
//! Invariants: the protocol name is checked where it is written
//! (`super::validate`), the other values by `resolve`; unknown keys
//! are errors; a layer that sets some keys keeps the others of the layers
//! below it.

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};

/// What the user wrote under `provider`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderFile {
    /// The protocol: `openai`, `openai-chat` or `anthropic`.
    pub name: Option<String>,
    pub reasoning_echo: Option<String>,
    pub prompt_cache_key: Option<bool>,
    pub cache_ttl: Option<String>,
    pub api_key_header: Option<String>,
    /// The output limit of every request (1 or more).
    pub max_output_tokens: Option<u32>,
    /// `false`: every request unstreamed (`"stream": false`).
    pub stream: Option<bool>,
    /// Whether the model takes images (over the known-models table).
    pub images: Option<bool>,
    /// Ask a server on this machine for its context window.
    pub probe: Option<bool>,
    /// Strict tool calling (`protocol::strict_schema`).
    pub strict_tools: Option<bool>,
}

/// The table form, with unknown keys refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderTable {
    #[serde(default, deserialize_with = "super::validate::provider")]
    name: Option<String>,
    reasoning_echo: Option<String>,
    prompt_cache_key: Option<bool>,
    cache_ttl: Option<String>,
    api_key_header: Option<String>,
    #[serde(default, deserialize_with = "super::validate::max_output_tokens")]
    max_output_tokens: Option<u32>,
    stream: Option<bool>,
    images: Option<bool>,
    probe: Option<bool>,
    strict_tools: Option<bool>,
}

impl ProviderFile {
    /// Every key `other` sets wins.
    pub(super) fn overlay(&mut self, other: ProviderFile) {
        let ProviderFile {
            name,
            reasoning_echo,
            prompt_cache_key,
            cache_ttl,
            api_key_header,
            max_output_tokens,
            stream,
            images,
            probe,
            strict_tools,
        } = other;
        self.name = name.or(self.name.take());
        self.reasoning_echo = reasoning_echo.or(self.reasoning_echo.take());
        self.prompt_cache_key = prompt_cache_key.or(self.prompt_cache_key);
        self.cache_ttl = cache_ttl.or(self.cache_ttl.take());
        self.api_key_header = api_key_header.or(self.api_key_header.take());
        self.max_output_tokens = max_output_tokens.or(self.max_output_tokens);
        self.stream = stream.or(self.stream);
        self.images = images.or(self.images);
        self.probe = probe.or(self.probe);
        self.strict_tools = strict_tools.or(self.strict_tools);
    }
}

impl<'de> Deserialize<'de> for ProviderFile {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ProviderVisitor)
    }
}

struct ProviderVisitor;

impl<'de> Visitor<'de> for ProviderVisitor {
    type Value = ProviderFile;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "a protocol name (\"openai\", \"openai-chat\", \"anthropic\") or a [provider] table",
        )
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<ProviderFile, E> {
        let name = super::validate::provider_name(name)?;
        Ok(ProviderFile { name: Some(name), ..ProviderFile::default() })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ProviderFile, A::Error> {
        let table = ProviderTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(ProviderFile {
            name: table.name,
            reasoning_echo: table.reasoning_echo,
            prompt_cache_key: table.prompt_cache_key,
            cache_ttl: table.cache_ttl,
            api_key_header: table.api_key_header,
            max_output_tokens: table.max_output_tokens,
            stream: table.stream,
            images: table.images,
            probe: table.probe,
            strict_tools: table.strict_tools,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Doc {
        provider: ProviderFile,
    }

    fn parse(text: &str) -> Result<ProviderFile, String> {
        toml::from_str::<Doc>(text).map(|doc| doc.provider).map_err(|e| e.to_string())
    }

    #[test]
    fn a_name_or_a_table() {
        assert_eq!(parse("provider = \"anthropic\"").unwrap().name.as_deref(), Some("anthropic"));
        let table = parse("[provider]\nname = \"openai-chat\"\nreasoning_echo = \"deepseek\"\nprompt_cache_key = false\n").unwrap();
        assert_eq!(table.name.as_deref(), Some("openai-chat"));
        assert_eq!(table.reasoning_echo.as_deref(), Some("deepseek"));
        assert_eq!(table.prompt_cache_key, Some(false));
        let limit = parse("[provider]\nmax_output_tokens = 1024\n").unwrap();
        assert_eq!(limit.max_output_tokens, Some(1024));
        let error = parse("[provider]\nmax_output_tokens = 0\n").unwrap_err();
        assert!(error.contains("provider.max_output_tokens must be 1 or more"), "{error}");
        let error = parse("[provider]\nreasoning_echoes = \"x\"\n").unwrap_err();
        assert!(error.contains("reasoning_echoes"), "{error}");
    }

    #[test]
    fn a_layer_keeps_what_it_does_not_set() {
        let mut merged = parse("provider = \"openai-chat\"").unwrap();
        merged.overlay(parse("provider.cache_ttl = \"1h\"").unwrap());
        assert_eq!(merged.name.as_deref(), Some("openai-chat"));
        assert_eq!(merged.cache_ttl.as_deref(), Some("1h"));
        merged.overlay(parse("provider.images = true").unwrap());
        merged.overlay(parse("provider.stream = true").unwrap());
        assert_eq!(merged.images, Some(true), "a later layer keeps images");
        assert!(parse("[provider]\nimages = \"yes\"\n").is_err());
        merged.overlay(parse("provider.strict_tools = true").unwrap());
        merged.overlay(parse("provider.probe = false").unwrap());
        assert_eq!(merged.strict_tools, Some(true), "a later layer keeps strict_tools");
        assert!(parse("[provider]\nstrict_tools = \"on\"\n").is_err());
    }
}
