//! Asking a server on this machine how large a context window it runs its
//! model with (issue 33): a local model's name is in no table, and a window
//! keel does not know is a window it cannot compact for, bound answers by,
//! or fit small prompts to.
//!
//! Where each server says it: llama.cpp `GET /props`
//! (`default_generation_settings.n_ctx`: the window each slot runs with);
//! vLLM `GET /v1/models` (`max_model_len` of the served model); LM Studio
//! `GET /api/v0/models` (`loaded_context_length`, else `max_context_length`);
//! Ollama `POST /api/show` (`parameters` `num_ctx`, and the model's own
//! `model_info.<arch>.context_length`) and `GET /api/ps` (the `context_length`
//! a loaded model runs with). Ollama runs a model with its `num_ctx`, else
//! with its server default (4096 tokens unless `OLLAMA_CONTEXT_LENGTH`
//! says more), and cuts longer prompts in silence: when the model takes
//! more than that, [`ServerWindow::model_window`] says so for a warning.
//! Ollama's OpenAI-compatible API takes no `num_ctx`, so keel cannot ask
//! for more there; the warning says how to.
//!
//! Invariants: only ever asked of a loopback host (`ServerProfile::probe_window`,
//! or `keel doctor` by hand), never of a cloud provider; every probe is
//! bounded by one short timeout and runs at the same time as the others, so
//! a server that answers none costs one timeout at most; a probe that fails
//! or says nothing usable is `None`, never an error (the window then stays
//! unknown, or is read from an overflow error later:
//! `context::models::window_from_overflow`). Parsing is pure (`parse_*`).

use std::time::Duration;

use serde_json::Value;

use super::ProviderConfig;

/// How long each probe may take: a server on this machine answers in
/// milliseconds, and a session start should not wait on one that hangs.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);
/// The window Ollama runs a model with when neither the model's
/// `num_ctx` nor a loaded model says otherwise (its default since 0.6.4;
/// `OLLAMA_CONTEXT_LENGTH` changes it, which keel cannot see).
pub const OLLAMA_DEFAULT_CTX: u64 = 4096;

/// Which server said what the window is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSource {
    /// llama.cpp's `/props`.
    LlamaCpp,
    /// vLLM's `/v1/models` (`max_model_len`).
    Vllm,
    /// LM Studio's `/api/v0/models`.
    LmStudio,
    /// Ollama's `/api/ps` (a loaded model's `context_length`).
    OllamaLoaded,
    /// Ollama's `/api/show` (`num_ctx` in the model's parameters).
    OllamaNumCtx,
    /// Ollama without either: its default.
    OllamaDefault,
}

impl WindowSource {
    /// Where the figure came from, for the notice and `keel doctor`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::LlamaCpp => "llama.cpp's /props (n_ctx)",
            Self::Vllm => "vLLM's /v1/models (max_model_len)",
            Self::LmStudio => "LM Studio's /api/v0/models",
            Self::OllamaLoaded => "Ollama's /api/ps (the loaded model's context_length)",
            Self::OllamaNumCtx => "Ollama's /api/show (the model's num_ctx)",
            Self::OllamaDefault => "Ollama's default num_ctx (the model sets none)",
        }
    }

    /// The server name, for messages.
    pub fn server(self) -> &'static str {
        match self {
            Self::LlamaCpp => "llama.cpp",
            Self::Vllm => "vLLM",
            Self::LmStudio => "LM Studio",
            Self::OllamaLoaded | Self::OllamaNumCtx | Self::OllamaDefault => "Ollama",
        }
    }
}

/// The window a server runs its model with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerWindow {
    /// Tokens the server will hold for one request, prompt and answer.
    pub tokens: u64,
    pub source: WindowSource,
    /// The window the model itself was trained for, when the server says
    /// it and it is larger than [`Self::tokens`] (Ollama: what a larger
    /// `num_ctx` would give).
    pub model_window: Option<u64>,
}

impl ServerWindow {
    /// The warning for a server that uses less of the model than it could,
    /// and cuts longer prompts without an error (Ollama), if that is so.
    pub fn truncation_warning(&self, model: &str) -> Option<String> {
        let larger = self.model_window.filter(|window| *window > self.tokens)?;
        Some(format!(
            "{server} runs {model} with a {tokens}-token window ({from}) though the model takes \
             {larger}; {server} cuts longer prompts without an error, so keel keeps requests \
             within {tokens} tokens. For more, set `PARAMETER num_ctx N` in a Modelfile or start \
             the server with OLLAMA_CONTEXT_LENGTH=N",
            server = self.source.server(),
            tokens = self.tokens,
            from = self.source.describe(),
        ))
    }
}

/// The server's root (`http://127.0.0.1:8080`) from a base URL ending in
/// its API version (`…/v1`).
pub(super) fn root_of(base_url: &str) -> &str {
    let base = base_url.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base)
}

/// Asks the server at `config.base_url` where each kind of local server
/// says its window, all at once, bounded by `timeout`; the first answer
/// in the order llama.cpp, LM Studio, vLLM, Ollama (a server answers only
/// its own).
pub async fn probe_window(
    config: &ProviderConfig,
    model: &str,
    timeout: Duration,
) -> Option<ServerWindow> {
    let http = reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .ok()?;
    let probe = Probe { http, key: config.api_key.as_deref(), root: root_of(&config.base_url) };
    let (props, studio, models, show, loaded) = tokio::join!(
        probe.get("/props"),
        probe.get("/api/v0/models"),
        probe.get("/v1/models"),
        probe.post("/api/show", serde_json::json!({ "model": model })),
        probe.get("/api/ps"),
    );
    let ollama = show.map(|show| parse_ollama(&show, loaded.as_ref(), model));
    props
        .and_then(|body| parse_props(&body))
        .or_else(|| studio.and_then(|body| parse_lm_studio(&body, model)))
        .or_else(|| models.and_then(|body| parse_vllm_models(&body, model)))
        .or(ollama.flatten())
}

/// The model ids `GET {base_url}/models` lists (`keel doctor`), or why
/// there are none.
pub async fn list_models(
    config: &ProviderConfig,
    timeout: Duration,
) -> Result<Vec<String>, String> {
    let http = reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| error.to_string())?;
    let url = format!("{}/models", config.base_url.trim_end_matches('/'));
    let probe = Probe { http, key: config.api_key.as_deref(), root: "" };
    let body = probe
        .send(probe.http.get(&url))
        .await
        .ok_or_else(|| format!("GET {url} gave no model list"))?;
    let ids = body["data"].as_array().into_iter().flatten();
    Ok(ids.filter_map(|entry| entry["id"].as_str().map(str::to_owned)).collect())
}

/// One server's HTTP client for the probes (and `tokenizer_probe`'s).
pub(super) struct Probe<'a> {
    pub(super) http: reqwest::Client,
    pub(super) key: Option<&'a str>,
    pub(super) root: &'a str,
}

impl Probe<'_> {
    async fn get(&self, path: &str) -> Option<Value> {
        self.send(self.http.get(format!("{}{path}", self.root))).await
    }

    pub(super) async fn post(&self, path: &str, body: Value) -> Option<Value> {
        self.send(self.http.post(format!("{}{path}", self.root)).json(&body)).await
    }

    /// The JSON body of a 2xx answer, else `None`.
    async fn send(&self, request: reqwest::RequestBuilder) -> Option<Value> {
        let request = match self.key {
            Some(key) => request.bearer_auth(key),
            None => request,
        };
        let response = request.send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let bytes = response.bytes().await.ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// A positive integer field.
fn tokens(value: &Value) -> Option<u64> {
    value.as_u64().filter(|tokens| *tokens > 0)
}

/// llama.cpp's `/props`: `default_generation_settings.n_ctx` (older
/// builds: `n_ctx` at the top).
pub fn parse_props(body: &Value) -> Option<ServerWindow> {
    let n_ctx = tokens(&body["default_generation_settings"]["n_ctx"]).or(tokens(&body["n_ctx"]))?;
    Some(ServerWindow { tokens: n_ctx, source: WindowSource::LlamaCpp, model_window: None })
}

/// The entry of an OpenAI-style model list for `model`: the one with its
/// id, else the only one (a server that serves one model under any name).
fn model_entry<'a>(body: &'a Value, model: &str) -> Option<&'a Value> {
    let data = body["data"].as_array()?;
    let only = match data.as_slice() {
        [only] => Some(only),
        _ => None,
    };
    data.iter().find(|entry| entry["id"] == model).or(only)
}

/// vLLM's `/v1/models`: `max_model_len` of the model.
pub fn parse_vllm_models(body: &Value, model: &str) -> Option<ServerWindow> {
    let len = tokens(&model_entry(body, model)?["max_model_len"])?;
    Some(ServerWindow { tokens: len, source: WindowSource::Vllm, model_window: None })
}

/// LM Studio's `/api/v0/models`: the loaded context length, else the
/// model's maximum.
pub fn parse_lm_studio(body: &Value, model: &str) -> Option<ServerWindow> {
    let entry = model_entry(body, model)?;
    let max = tokens(&entry["max_context_length"]);
    let loaded = tokens(&entry["loaded_context_length"]);
    let window = loaded.or(max)?;
    Some(ServerWindow {
        tokens: window,
        source: WindowSource::LmStudio,
        model_window: max.filter(|max| *max > window),
    })
}

/// Ollama: the loaded model's `context_length` (`/api/ps`), else the
/// model's `num_ctx` (`/api/show` parameters), else the server default;
/// the model's own window from `model_info.*.context_length`.
pub fn parse_ollama(show: &Value, loaded: Option<&Value>, model: &str) -> Option<ServerWindow> {
    // An answer without either field is not Ollama's.
    if show.get("model_info").is_none() && show.get("parameters").is_none() {
        return None;
    }
    let trained = show["model_info"].as_object().and_then(|info| {
        info.iter().find(|(key, _)| key.ends_with(".context_length")).and_then(|(_, v)| tokens(v))
    });
    let running = loaded
        .and_then(|ps| ps["models"].as_array())
        .into_iter()
        .flatten()
        .find(|entry| entry["name"] == model || entry["model"] == model)
        .and_then(|entry| tokens(&entry["context_length"]));
    let (window, source) = match (running, num_ctx(show)) {
        (Some(window), _) => (window, WindowSource::OllamaLoaded),
        (None, Some(window)) => (window, WindowSource::OllamaNumCtx),
        (None, None) => (OLLAMA_DEFAULT_CTX, WindowSource::OllamaDefault),
    };
    let window = trained.map_or(window, |trained| window.min(trained));
    Some(ServerWindow {
        tokens: window,
        source,
        model_window: trained.filter(|trained| *trained > window),
    })
}

/// `num_ctx` in `/api/show`'s `parameters` text (`num_ctx    8192`).
fn num_ctx(show: &Value) -> Option<u64> {
    show["parameters"].as_str()?.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx")).then(|| words.next()?.parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn llama_cpp_props_give_n_ctx() {
        let props = json!({"default_generation_settings": {"n_ctx": 4096, "params": {}},
            "total_slots": 1});
        assert_eq!(parse_props(&props).map(|w| w.tokens), Some(4096));
        assert_eq!(parse_props(&json!({"n_ctx": 2048})).map(|w| w.tokens), Some(2048));
        assert_eq!(parse_props(&json!({"default_generation_settings": {}})), None);
        assert_eq!(parse_props(&json!({"n_ctx": 0})), None, "no window is not a window");
    }

    #[test]
    fn vllm_models_give_max_model_len_of_the_model() {
        let models = json!({"object": "list", "data": [
            {"id": "Qwen/Qwen3-8B", "max_model_len": 32768},
            {"id": "other", "max_model_len": 4096}]});
        assert_eq!(parse_vllm_models(&models, "Qwen/Qwen3-8B").map(|w| w.tokens), Some(32768));
        assert_eq!(parse_vllm_models(&models, "missing"), None, "two models, neither named");
        let one = json!({"data": [{"id": "served", "max_model_len": 8192}]});
        assert_eq!(parse_vllm_models(&one, "any").map(|w| w.tokens), Some(8192));
        let plain = json!({"data": [{"id": "gpt-4o", "object": "model"}]});
        assert_eq!(parse_vllm_models(&plain, "gpt-4o"), None, "an OpenAI list says nothing");
    }

    #[test]
    fn lm_studio_prefers_the_loaded_length() {
        let models = json!({"data": [{"id": "qwen2.5-7b-instruct", "state": "loaded",
            "max_context_length": 32768, "loaded_context_length": 4096}]});
        let window = parse_lm_studio(&models, "qwen2.5-7b-instruct").unwrap();
        assert_eq!((window.tokens, window.model_window), (4096, Some(32768)));
        let unloaded = json!({"data": [{"id": "m", "max_context_length": 8192}]});
        assert_eq!(parse_lm_studio(&unloaded, "m").map(|w| w.tokens), Some(8192));
    }

    #[test]
    fn ollama_runs_the_loaded_length_then_num_ctx_then_its_default() {
        let show = json!({"parameters": "stop    \"<|im_end|>\"\nnum_ctx    8192",
            "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}});
        let window = parse_ollama(&show, None, "qwen2.5:7b").unwrap();
        assert_eq!(window.tokens, 8192);
        assert_eq!(window.source, WindowSource::OllamaNumCtx);
        assert_eq!(window.model_window, Some(32768));
        assert!(window.truncation_warning("qwen2.5:7b").unwrap().contains("OLLAMA_CONTEXT_LENGTH"));

        let bare =
            json!({"parameters": "stop \"x\"", "model_info": {"llama.context_length": 131072}});
        let window = parse_ollama(&bare, None, "llama3.1").unwrap();
        assert_eq!((window.tokens, window.source), (4096, WindowSource::OllamaDefault));

        let ps = json!({"models": [{"name": "llama3.1", "model": "llama3.1",
            "context_length": 16384}]});
        let window = parse_ollama(&bare, Some(&ps), "llama3.1").unwrap();
        assert_eq!((window.tokens, window.source), (16384, WindowSource::OllamaLoaded));

        let small = json!({"model_info": {"gemma3.context_length": 2048}});
        let window = parse_ollama(&small, None, "gemma3:270m").unwrap();
        assert_eq!((window.tokens, window.model_window), (2048, None), "never above the model's");
        assert_eq!(window.truncation_warning("gemma3:270m"), None);
        assert_eq!(parse_ollama(&json!({"error": "not found"}), None, "m"), None);
    }

    #[test]
    fn the_root_is_the_base_url_without_its_version() {
        assert_eq!(root_of("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080");
        assert_eq!(root_of("http://127.0.0.1:8080/v1/"), "http://127.0.0.1:8080");
        assert_eq!(root_of("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
    }
}
