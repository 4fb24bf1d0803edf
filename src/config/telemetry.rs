//! The `[telemetry]` table and the standard `OTEL_*` variables: whether
//! and where a session exports OpenTelemetry (OTLP over HTTP/protobuf;
//! `telemetry/`).
//!
//! ```toml
//! [telemetry]
//! enabled = true                        # off unless set
//! endpoint = "http://127.0.0.1:4318"    # the collector's base URL
//! protocol = "http/protobuf"            # the only one keel speaks
//! service_name = "keel"
//! timeout_ms = 10000                    # one export request at most
//! log_prompts = false                   # user prompts and model text in log events
//! log_tool_content = false              # tool arguments and results in spans and logs
//! ```
//!
//! The variables (read from the injected environment) win over the file:
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (a base: `/v1/traces`, `/v1/metrics`,
//! `/v1/logs` are appended), `OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_ENDPOINT`
//! (used as they are), `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`,
//! percent-encoded values), `OTEL_EXPORTER_OTLP_PROTOCOL`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT` (ms) and `OTEL_SERVICE_NAME`; `enabled`
//! stays the file's (or `-c telemetry.enabled=true`): a variable alone
//! never switches export on.
//!
//! Invariants: the table is user file and `-c` only (`trust.rs`: a
//! project could otherwise send its prompts to a collector of its
//! choosing); headers are secrets: never logged or shown (`Debug` prints
//! their names only); `grpc` is refused with a message that says
//! `http/protobuf` works (gRPC would need tonic; see `telemetry/`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// The default collector (the OTLP/HTTP port on this machine).
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318";
/// One export request's longest wait (OTLP's default).
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// `[telemetry]` as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryFile {
    pub enabled: Option<bool>,
    pub endpoint: Option<String>,
    pub protocol: Option<String>,
    pub service_name: Option<String>,
    pub timeout_ms: Option<u64>,
    pub log_prompts: Option<bool>,
    pub log_tool_content: Option<bool>,
}

impl TelemetryFile {
    /// `other` (a later layer) over this one, key by key.
    pub fn overlay(&mut self, other: Self) {
        let Self {
            enabled,
            endpoint,
            protocol,
            service_name,
            timeout_ms,
            log_prompts,
            log_tool_content,
        } = other;
        self.enabled = enabled.or(self.enabled);
        self.endpoint = endpoint.or(self.endpoint.take());
        self.protocol = protocol.or(self.protocol.take());
        self.service_name = service_name.or(self.service_name.take());
        self.timeout_ms = timeout_ms.or(self.timeout_ms);
        self.log_prompts = log_prompts.or(self.log_prompts);
        self.log_tool_content = log_tool_content.or(self.log_tool_content);
    }
}

/// Where and what a session exports (`None` in [`super::Settings`]: off).
#[derive(Clone, PartialEq, Eq)]
pub struct TelemetrySettings {
    pub traces_url: String,
    pub metrics_url: String,
    pub logs_url: String,
    /// Sent with every export request; secrets (never printed).
    pub headers: Vec<(String, String)>,
    pub service_name: String,
    pub timeout: Duration,
    pub log_prompts: bool,
    pub log_tool_content: bool,
}

impl std::fmt::Debug for TelemetrySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("TelemetrySettings")
            .field("traces_url", &self.traces_url)
            .field("metrics_url", &self.metrics_url)
            .field("logs_url", &self.logs_url)
            .field("header_names", &header_names)
            .field("service_name", &self.service_name)
            .field("timeout", &self.timeout)
            .field("log_prompts", &self.log_prompts)
            .field("log_tool_content", &self.log_tool_content)
            .finish()
    }
}

/// Why `[telemetry]` or an `OTEL_*` variable cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TelemetryConfigError {
    #[error(
        "telemetry protocol `{0}` is not supported: keel exports OTLP over HTTP \
         (`http/protobuf`); point it at the collector's HTTP port (4318)"
    )]
    Protocol(String),
    #[error("telemetry endpoint `{0}` is not an http:// or https:// URL")]
    Endpoint(String),
    #[error(
        "OTEL_EXPORTER_OTLP_HEADERS has an entry without `=` (entry {0}); write `name=value,…`"
    )]
    Header(usize),
}

/// The settings from the merged table and the variables in `vars`.
pub fn resolve(
    file: Option<TelemetryFile>,
    vars: &BTreeMap<String, String>,
) -> Result<Option<TelemetrySettings>, TelemetryConfigError> {
    let file = file.unwrap_or_default();
    if file.enabled != Some(true) {
        return Ok(None);
    }
    let var = |name: &str| vars.get(name).map(|value| value.trim()).filter(|v| !v.is_empty());
    let protocol = var("OTEL_EXPORTER_OTLP_PROTOCOL")
        .map(str::to_owned)
        .or(file.protocol)
        .unwrap_or_else(|| "http/protobuf".to_owned());
    if protocol != "http/protobuf" {
        return Err(TelemetryConfigError::Protocol(protocol));
    }
    let base = var("OTEL_EXPORTER_OTLP_ENDPOINT")
        .map(str::to_owned)
        .or(file.endpoint)
        .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
    let url = |signal: &str, path: &str| -> Result<String, TelemetryConfigError> {
        let url = match var(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")) {
            Some(exact) => exact.to_owned(),
            None => format!("{}/{path}", base.trim_end_matches('/')),
        };
        if url.starts_with("http://") || url.starts_with("https://") {
            Ok(url)
        } else {
            Err(TelemetryConfigError::Endpoint(url))
        }
    };
    let timeout_ms = var("OTEL_EXPORTER_OTLP_TIMEOUT")
        .and_then(|ms| ms.parse().ok())
        .or(file.timeout_ms)
        .unwrap_or(DEFAULT_TIMEOUT_MS);
    Ok(Some(TelemetrySettings {
        traces_url: url("TRACES", "v1/traces")?,
        metrics_url: url("METRICS", "v1/metrics")?,
        logs_url: url("LOGS", "v1/logs")?,
        headers: headers(var("OTEL_EXPORTER_OTLP_HEADERS").unwrap_or(""))?,
        service_name: var("OTEL_SERVICE_NAME")
            .map(str::to_owned)
            .or(file.service_name)
            .unwrap_or_else(|| "keel".to_owned()),
        timeout: Duration::from_millis(timeout_ms.max(1)),
        log_prompts: file.log_prompts.unwrap_or(false),
        log_tool_content: file.log_tool_content.unwrap_or(false),
    }))
}

/// `name=value,name2=value2` (W3C baggage-like, values percent-encoded).
fn headers(text: &str) -> Result<Vec<(String, String)>, TelemetryConfigError> {
    let mut out = Vec::new();
    for (index, entry) in text.split(',').enumerate() {
        if entry.trim().is_empty() {
            continue;
        }
        let (name, value) = entry.split_once('=').ok_or(TelemetryConfigError::Header(index + 1))?;
        let value = url::form_urlencoded::parse(format!("v={}", value.trim()).as_bytes())
            .next()
            .map(|(_, decoded)| decoded.into_owned())
            .unwrap_or_default();
        out.push((name.trim().to_owned(), value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn on() -> Option<TelemetryFile> {
        Some(TelemetryFile { enabled: Some(true), ..TelemetryFile::default() })
    }

    #[test]
    fn off_unless_enabled_even_with_the_variables() {
        let env = vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")]);
        assert_eq!(resolve(None, &env), Ok(None));
        let off = TelemetryFile { enabled: Some(false), ..TelemetryFile::default() };
        assert_eq!(resolve(Some(off), &env), Ok(None));
    }

    #[test]
    fn the_standard_variables_set_urls_headers_and_name() {
        let env = vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9999/t"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret, x-team = a"),
            ("OTEL_SERVICE_NAME", "ci-agent"),
        ]);
        let settings = resolve(on(), &env).unwrap().unwrap();
        assert_eq!(settings.traces_url, "http://127.0.0.1:9999/t");
        assert_eq!(settings.metrics_url, "http://127.0.0.1:4318/v1/metrics");
        assert_eq!(settings.logs_url, "http://127.0.0.1:4318/v1/logs");
        assert_eq!(
            settings.headers,
            [("authorization".into(), "Bearer s3cret".into()), ("x-team".into(), "a".into())]
        );
        assert_eq!(settings.service_name, "ci-agent");
        assert!(!settings.log_prompts && !settings.log_tool_content);
        let shown = format!("{settings:?}");
        assert!(!shown.contains("s3cret") && shown.contains("authorization"), "{shown}");
    }

    #[test]
    fn the_file_sets_the_base_and_grpc_is_refused() {
        let file = TelemetryFile {
            endpoint: Some("https://collector.example.invalid".into()),
            log_prompts: Some(true),
            ..on().unwrap_or_default()
        };
        let settings = resolve(Some(file), &vars(&[])).unwrap().unwrap();
        assert_eq!(settings.traces_url, "https://collector.example.invalid/v1/traces");
        assert!(settings.log_prompts);
        let grpc = TelemetryFile { protocol: Some("grpc".into()), ..on().unwrap_or_default() };
        let error = resolve(Some(grpc), &vars(&[])).unwrap_err();
        assert!(error.to_string().contains("http/protobuf"), "{error}");
        let bad = vars(&[("OTEL_EXPORTER_OTLP_HEADERS", "novalue")]);
        assert_eq!(resolve(on(), &bad), Err(TelemetryConfigError::Header(1)));
    }
}
