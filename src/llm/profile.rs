//! Server profiles: what a server needs that its stream does not say.
//! Each behaviour is detected from the base URL and the model name, and a
//! `[provider]` setting overrides the detection (README, "Servers").
//!
//! Invariants: pure (strings in, a profile out); detection only ever turns
//! on behaviour the detected server documents, so an unknown server gets
//! plain OpenAI-shaped requests.
//!
//! # Provider data kept verbatim
//!
//! Whatever a server attaches for the next request is kept on the items and sent back verbatim:
//! `ToolCall.provider_data` (per call: Gemini's `extra_content`, LiteLLM's fields),
//! `ReasoningItem::Chat` (reasoning text with the field it came in, plus message-level
//! `reasoning_details`/`extra_content`/`thinking_blocks`), `ReasoningItem::OpenAi.content`
//! (reasoning text of open-model Responses servers). They are in `model_response` log lines, so a
//! resumed session sends them too. Reasoning *text* on Chat Completions goes back only as
//! `ServerProfile::reasoning_echo` says (DeepSeek detected). Anthropic requests put keys in
//! cache-prefix order (tools, system, messages) so consecutive requests agree byte for byte up to
//! the previous tail breakpoint (`tests/suite/servers_cache.rs`); Responses requests carry the
//! session id as `prompt_cache_key` (`LlmClient::with_cache_key`, set by
//! `runtime/model_client.rs`).
//!
//! The server corpus is `tests/fixtures/servers/*.sse` (the source of each in its comment line),
//! replayed through the real binary by `tests/suite/servers*.rs` and held to the
//! split-at-every-byte invariant by `llm/server_shape_tests.rs`. A new server quirk: a field here,
//! detected from the URL or model, overridable with `[provider]` (`config/provider.rs`), and a
//! recorded stream in that corpus.

/// When reasoning text streamed by a Chat Completions server goes back in
/// the assistant messages of later requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReasoningEcho {
    /// Never (OpenAI and most servers reject or ignore unknown fields).
    #[default]
    Off,
    /// DeepSeek's thinking mode: every assistant message with tool calls
    /// carries `reasoning_content` (empty when there was none), or the API
    /// answers 400; messages without calls carry none.
    Deepseek,
    /// Every assistant message that had reasoning, under the field it came
    /// in (`reasoning_content` or `reasoning`).
    Always,
}

impl ReasoningEcho {
    /// The `[provider] reasoning_echo` value; `auto` (detect) is `None`.
    pub fn parse(text: &str) -> Option<Option<Self>> {
        match text {
            "auto" => Some(None),
            "off" => Some(Some(Self::Off)),
            "deepseek" => Some(Some(Self::Deepseek)),
            "always" => Some(Some(Self::Always)),
            _ => None,
        }
    }
}

/// How long Anthropic keeps what a request writes to its prompt cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheTtl {
    /// The default: five minutes, refreshed by every read; writes cost
    /// 1.25× the input price.
    #[default]
    FiveMinutes,
    /// One hour; writes cost 2× the input price.
    OneHour,
}

impl CacheTtl {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "5m" => Some(Self::FiveMinutes),
            "1h" => Some(Self::OneHour),
            _ => None,
        }
    }
}

/// Which header carries the API key on the OpenAI protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyHeader {
    /// `Authorization: Bearer KEY`.
    #[default]
    Bearer,
    /// `api-key: KEY` (Azure OpenAI).
    ApiKey,
}

impl KeyHeader {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "bearer" | "authorization" => Some(Self::Bearer),
            "api-key" => Some(Self::ApiKey),
            _ => None,
        }
    }
}

/// Which field of a Chat Completions request carries the output limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputLimitField {
    /// `max_tokens`: what llama.cpp, llama-cpp-python, Ollama, vLLM and
    /// most compatible servers read.
    #[default]
    MaxTokens,
    /// `max_completion_tokens`: OpenAI's (and Azure's) current name; their
    /// reasoning models refuse `max_tokens`.
    MaxCompletionTokens,
}

/// A server on this machine, told apart by its default port where that is
/// unambiguous: what keel can say about why it passed no tools on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalServer {
    /// Port 11434.
    Ollama,
    /// Port 8080 (`llama-server`).
    LlamaCpp,
    /// Port 1234.
    LmStudio,
    /// Port 8000: llama-cpp-python's and vLLM's default alike.
    LlamaCppPythonOrVllm,
    /// Any other port.
    Unknown,
}

impl LocalServer {
    fn from_port(port: Option<u16>) -> Self {
        match port {
            Some(11434) => Self::Ollama,
            Some(8080) => Self::LlamaCpp,
            Some(1234) => Self::LmStudio,
            Some(8000) => Self::LlamaCppPythonOrVllm,
            _ => Self::Unknown,
        }
    }

    /// The usual reason a model behind this server never calls a tool.
    pub fn tool_advice(self) -> &'static str {
        match self {
            Self::Ollama => {
                "Ollama passes tools only to models whose template has them (`ollama show MODEL`)"
            }
            Self::LlamaCpp => "llama.cpp's server needs `--jinja` to put the tools in the prompt",
            Self::LmStudio => "LM Studio passes tools only to models it lists as tool-capable",
            Self::LlamaCppPythonOrVllm => {
                "llama-cpp-python passes tools to the model only with `--chat_format \
                 chatml-function-calling` or a chat template that has them; vLLM needs \
                 `--enable-auto-tool-choice --tool-call-parser NAME`"
            }
            Self::Unknown => {
                "the server may not pass the tools to the model (llama.cpp: `--jinja`; \
                 llama-cpp-python: `--chat_format chatml-function-calling`; vLLM: \
                 `--enable-auto-tool-choice`; Ollama, LM Studio: a tool-capable model)"
            }
        }
    }
}

/// The `[provider]` settings; `None` leaves a behaviour to detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProfileSettings {
    pub reasoning_echo: Option<ReasoningEcho>,
    pub prompt_cache_key: Option<bool>,
    pub cache_ttl: Option<CacheTtl>,
    pub key_header: Option<KeyHeader>,
    /// `[provider] max_output_tokens`: the output limit of every request.
    pub max_output_tokens: Option<u32>,
    /// `[provider] stream = false`: every request unstreamed (Chat
    /// Completions only; `config` refuses it on the other protocols).
    pub unstreamed: bool,
    /// `[provider] images`: whether the model takes images, over the
    /// known-models table (`context::models::takes_images`).
    pub images: Option<bool>,
    /// `[provider] probe`: ask the server for its window at the start.
    pub probe: Option<bool>,
    /// `[provider] strict_tools = true`.
    pub strict_tools: bool,
}

/// What keel does for the server it talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerProfile {
    pub reasoning_echo: ReasoningEcho,
    /// Send the session id as `prompt_cache_key` (OpenAI protocols).
    pub prompt_cache_key: bool,
    pub cache_ttl: CacheTtl,
    pub key_header: KeyHeader,
    /// Send `tool_choice: "auto"` beside the tools (Chat Completions).
    /// It is the OpenAI default, but llama-cpp-python leaves the tools out
    /// of the prompt without it; vLLM without `--enable-auto-tool-choice`
    /// answers it with a 400 that names the flag, where it would otherwise
    /// ignore the tools in silence. Detected for servers on this machine
    /// (loopback hosts), where those servers run.
    pub tool_choice_auto: bool,
    /// The Chat Completions field of the output limit (OpenAI and Azure
    /// hosts: `max_completion_tokens`).
    pub output_limit_field: OutputLimitField,
    /// The configured output limit (`[provider] max_output_tokens`); the
    /// loop derives one from the window without it
    /// (`context::models::output_limit`).
    pub max_output_tokens: Option<u32>,
    /// The server runs on this machine (a loopback host), where a model
    /// that never calls a tool is usually the server's doing
    /// (`keel exec`'s `no_tool_call`).
    pub local_server: Option<LocalServer>,
    /// Send every request with `"stream": false` (`[provider] stream`).
    pub unstreamed: bool,
    /// `[provider] images`, if set: whether the model takes images.
    pub images: Option<bool>,
    /// Ask the server for its context window once at the start
    /// (`window_probe`): detected for a loopback host on a local server's
    /// default port (11434, 8080, 1234, 8000), where the answer is the
    /// server's own; `[provider] probe` turns it on for any loopback port
    /// and off. Never for a host off this machine.
    pub probe_window: bool,
    /// Strict tool calling (`[provider] strict_tools = true`; never
    /// detected: a server that copies an API without its strict mode may
    /// refuse the flag, and a model may not support it). Each tool's schema
    /// goes in the protocol's strict subset with `strict: true`
    /// (`protocol::strict_schema`), a tool with no strict form (an MCP
    /// tool, `call_tool`) as it is with `strict: false`.
    pub strict_tools: bool,
}

impl ServerProfile {
    /// Detection from the base URL and model, then the settings on top.
    pub fn detect(
        kind: super::ProviderKind,
        base_url: &str,
        model: &str,
        settings: ProfileSettings,
    ) -> Self {
        let host = host_of(base_url);
        let model = model.to_ascii_lowercase();
        let deepseek = host.ends_with("deepseek.com") || model.contains("deepseek");
        let azure = [".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"]
            .iter()
            .any(|suffix| host.ends_with(suffix))
            || base_url.contains("api-version=");
        let cache_key = match kind {
            // The Responses API documents it; servers that copy the API
            // without it ignore unknown fields or reject the whole request
            // alike, and those are the ones that copy it least.
            super::ProviderKind::OpenAiResponses => true,
            // Chat Completions servers vary (some answer 400 to unknown
            // fields): only OpenAI's own, which documents it.
            super::ProviderKind::OpenAiChat => host == "api.openai.com",
            super::ProviderKind::Anthropic => false,
        };
        let local = matches!(host.as_str(), "localhost" | "::1") || host.starts_with("127.");
        let detected = Self {
            reasoning_echo: if deepseek { ReasoningEcho::Deepseek } else { ReasoningEcho::Off },
            prompt_cache_key: cache_key,
            cache_ttl: CacheTtl::FiveMinutes,
            key_header: if azure { KeyHeader::ApiKey } else { KeyHeader::Bearer },
            tool_choice_auto: local && kind == super::ProviderKind::OpenAiChat,
            output_limit_field: if azure || host == "api.openai.com" {
                OutputLimitField::MaxCompletionTokens
            } else {
                OutputLimitField::MaxTokens
            },
            max_output_tokens: None,
            local_server: local.then(|| LocalServer::from_port(port_of(base_url))),
            unstreamed: false,
            images: None,
            probe_window: false,
            strict_tools: false,
        };
        let known_port = detected.local_server.is_some_and(|server| server != LocalServer::Unknown);
        Self {
            reasoning_echo: settings.reasoning_echo.unwrap_or(detected.reasoning_echo),
            prompt_cache_key: settings.prompt_cache_key.unwrap_or(detected.prompt_cache_key),
            cache_ttl: settings.cache_ttl.unwrap_or(detected.cache_ttl),
            key_header: settings.key_header.unwrap_or(detected.key_header),
            tool_choice_auto: detected.tool_choice_auto,
            output_limit_field: detected.output_limit_field,
            max_output_tokens: settings.max_output_tokens,
            local_server: detected.local_server,
            unstreamed: settings.unstreamed,
            images: settings.images,
            probe_window: local && settings.probe.unwrap_or(known_port),
            strict_tools: settings.strict_tools,
        }
    }

    /// Whether `model` takes images: `[provider] images` when set, else
    /// the known-models table (unknown and local models: no).
    pub fn takes_images(&self, model: &str) -> bool {
        self.images.unwrap_or_else(|| crate::context::models::takes_images(model))
    }
}

/// The explicit port of a URL, if it names one.
fn port_of(url: &str) -> Option<u16> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let after_host = match host.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or("", |(_, rest)| rest),
        None => host,
    };
    after_host.rsplit_once(':').and_then(|(_, port)| port.parse().ok())
}

/// The lowercase host of a URL, without port or credentials ("" if none).
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.split(':').next().unwrap_or(""),
    };
    host.to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::super::ProviderKind;
    use super::*;

    fn detect(kind: ProviderKind, url: &str, model: &str) -> ServerProfile {
        ServerProfile::detect(kind, url, model, ProfileSettings::default())
    }

    #[test]
    fn deepseek_is_detected_by_host_or_model() {
        let chat = ProviderKind::OpenAiChat;
        let echo = |url, model| detect(chat, url, model).reasoning_echo;
        assert_eq!(echo("https://api.deepseek.com/v1", "deepseek-chat"), ReasoningEcho::Deepseek);
        assert_eq!(
            echo("http://127.0.0.1:8000/v1", "deepseek-ai/DeepSeek-R1"),
            ReasoningEcho::Deepseek
        );
        assert_eq!(echo("https://api.openai.com/v1", "gpt-5"), ReasoningEcho::Off);
        assert_eq!(echo("https://evil.example/deepseek.com/v1", "qwen3"), ReasoningEcho::Off);
    }

    #[test]
    fn prompt_cache_key_goes_to_responses_and_openai_chat_only() {
        assert!(
            detect(ProviderKind::OpenAiResponses, "http://127.0.0.1:1/v1", "m").prompt_cache_key
        );
        assert!(
            detect(ProviderKind::OpenAiChat, "https://api.openai.com/v1", "m").prompt_cache_key
        );
        assert!(
            !detect(ProviderKind::OpenAiChat, "https://api.groq.com/openai/v1", "m")
                .prompt_cache_key
        );
        assert!(
            !detect(ProviderKind::Anthropic, "https://api.anthropic.com/v1", "m").prompt_cache_key
        );
    }

    #[test]
    fn azure_gets_the_api_key_header() {
        let chat = ProviderKind::OpenAiChat;
        let header = |url| detect(chat, url, "m").key_header;
        assert_eq!(header("https://res.openai.azure.com/openai/v1"), KeyHeader::ApiKey);
        assert_eq!(
            header("http://127.0.0.1:9/openai/deployments/d?api-version=2024-10-21"),
            KeyHeader::ApiKey
        );
        assert_eq!(header("https://user@api.openai.com:443/v1"), KeyHeader::Bearer);
    }

    #[test]
    fn tool_choice_auto_goes_to_local_chat_servers() {
        let auto = |kind, url| detect(kind, url, "m").tool_choice_auto;
        assert!(auto(ProviderKind::OpenAiChat, "http://127.0.0.1:8000/v1"));
        assert!(auto(ProviderKind::OpenAiChat, "http://localhost:11434/v1"));
        assert!(auto(ProviderKind::OpenAiChat, "http://[::1]:8080/v1"));
        assert!(!auto(ProviderKind::OpenAiChat, "https://api.openai.com/v1"));
        assert!(!auto(ProviderKind::OpenAiResponses, "http://127.0.0.1:8000/v1"));
    }

    #[test]
    fn local_servers_are_told_apart_by_their_default_port() {
        let server = |url| detect(ProviderKind::OpenAiChat, url, "m").local_server;
        assert_eq!(server("http://127.0.0.1:11434/v1"), Some(LocalServer::Ollama));
        assert_eq!(server("http://localhost:8080/v1"), Some(LocalServer::LlamaCpp));
        assert_eq!(server("http://[::1]:8000/v1"), Some(LocalServer::LlamaCppPythonOrVllm));
        assert_eq!(server("http://127.0.0.1:41234/v1"), Some(LocalServer::Unknown));
        assert_eq!(server("https://api.openai.com:8080/v1"), None, "not on this machine");
    }

    #[test]
    fn only_local_servers_are_probed_for_their_window() {
        let probe = |url, setting| {
            let settings = ProfileSettings { probe: setting, ..ProfileSettings::default() };
            ServerProfile::detect(ProviderKind::OpenAiChat, url, "m", settings).probe_window
        };
        assert!(probe("http://127.0.0.1:8080/v1", None), "llama.cpp's port");
        assert!(probe("http://localhost:11434/v1", None), "Ollama's port");
        assert!(!probe("http://127.0.0.1:41234/v1", None), "an unknown port: only when asked");
        assert!(probe("http://127.0.0.1:41234/v1", Some(true)));
        assert!(!probe("http://127.0.0.1:8080/v1", Some(false)));
        assert!(!probe("https://api.openai.com/v1", Some(true)), "never a cloud provider");
    }

    #[test]
    fn openai_and_azure_chat_take_max_completion_tokens() {
        let field = |url| detect(ProviderKind::OpenAiChat, url, "m").output_limit_field;
        assert_eq!(field("https://api.openai.com/v1"), OutputLimitField::MaxCompletionTokens);
        assert_eq!(
            field("https://r.openai.azure.com/openai/v1"),
            OutputLimitField::MaxCompletionTokens
        );
        assert_eq!(field("http://127.0.0.1:8080/v1"), OutputLimitField::MaxTokens);
        assert_eq!(field("https://api.groq.com/openai/v1"), OutputLimitField::MaxTokens);
    }

    #[test]
    fn settings_win_over_detection() {
        let settings = ProfileSettings {
            reasoning_echo: Some(ReasoningEcho::Always),
            prompt_cache_key: Some(false),
            cache_ttl: Some(CacheTtl::OneHour),
            key_header: Some(KeyHeader::Bearer),
            max_output_tokens: Some(900),
            unstreamed: true,
            images: Some(true),
            probe: Some(true),
            strict_tools: true,
        };
        let profile = ServerProfile::detect(
            ProviderKind::OpenAiResponses,
            "https://x.openai.azure.com/openai/v1",
            "deepseek-r1",
            settings,
        );
        assert_eq!(
            profile,
            ServerProfile {
                reasoning_echo: ReasoningEcho::Always,
                prompt_cache_key: false,
                cache_ttl: CacheTtl::OneHour,
                key_header: KeyHeader::Bearer,
                tool_choice_auto: false,
                output_limit_field: OutputLimitField::MaxCompletionTokens,
                max_output_tokens: Some(900),
                local_server: None,
                unstreamed: true,
                images: Some(true),
                probe_window: false,
                strict_tools: true,
            }
        );
        assert!(profile.takes_images("deepseek-r1"), "the setting wins over the table");
        assert_eq!(ReasoningEcho::parse("auto"), Some(None));
        assert_eq!(ReasoningEcho::parse("sometimes"), None);
    }
}
