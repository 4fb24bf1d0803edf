//! keel's spans, log events and metrics as OTLP export requests (the
//! official protobuf messages of `opentelemetry-proto`), under one
//! resource (`service.name`, `service.version`) and one scope (`keel`).

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Histogram, HistogramDataPoint, Metric, NumberDataPoint,
    ResourceMetrics, ScopeMetrics, Sum, metric, number_data_point,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    ResourceSpans, ScopeSpans, Span, Status, span, status,
};

use super::model::{Attrs, LATENCY_BOUNDS_MS, LogEvent, Metrics, SpanRecord, Value};

fn any(value: &Value) -> AnyValue {
    let value = match value {
        Value::Str(text) => any_value::Value::StringValue(text.clone()),
        Value::Int(number) => any_value::Value::IntValue(*number),
        Value::Float(number) => any_value::Value::DoubleValue(*number),
        Value::Bool(flag) => any_value::Value::BoolValue(*flag),
    };
    AnyValue { value: Some(value) }
}

fn key_values(attrs: &Attrs) -> Vec<KeyValue> {
    attrs
        .iter()
        .map(|(key, value)| KeyValue {
            key: (*key).to_owned(),
            value: Some(any(value)),
            ..KeyValue::default()
        })
        .collect()
}

fn string_pairs(attrs: &[(&'static str, String)]) -> Vec<KeyValue> {
    key_values(&attrs.iter().map(|(key, value)| (*key, Value::Str(value.clone()))).collect())
}

fn resource(service_name: &str) -> Resource {
    Resource {
        attributes: key_values(&vec![
            ("service.name", service_name.into()),
            ("service.version", env!("CARGO_PKG_VERSION").into()),
        ]),
        ..Resource::default()
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope {
        name: "keel".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        ..InstrumentationScope::default()
    }
}

/// The spans as one trace export request.
pub fn traces_request(service_name: &str, spans: &[SpanRecord]) -> ExportTraceServiceRequest {
    let spans = spans
        .iter()
        .map(|record| Span {
            trace_id: record.trace.0.to_vec(),
            span_id: record.span.0.to_vec(),
            parent_span_id: record.parent.map(|parent| parent.0.to_vec()).unwrap_or_default(),
            name: record.name.clone(),
            kind: span::SpanKind::Internal as i32,
            start_time_unix_nano: record.start,
            end_time_unix_nano: record.end.max(record.start),
            attributes: key_values(&record.attrs),
            status: Some(match &record.error {
                Some(message) => {
                    Status { message: message.clone(), code: status::StatusCode::Error as i32 }
                }
                None => Status { message: String::new(), code: status::StatusCode::Ok as i32 },
            }),
            ..Span::default()
        })
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource(service_name)),
            scope_spans: vec![ScopeSpans { scope: Some(scope()), spans, ..ScopeSpans::default() }],
            ..ResourceSpans::default()
        }],
    }
}

/// The log events as one logs export request.
pub fn logs_request(service_name: &str, events: &[LogEvent]) -> ExportLogsServiceRequest {
    let log_records = events
        .iter()
        .map(|event| {
            let (severity, text) = if event.error {
                (SeverityNumber::Error, "ERROR")
            } else {
                (SeverityNumber::Info, "INFO")
            };
            LogRecord {
                time_unix_nano: event.time,
                observed_time_unix_nano: event.time,
                severity_number: severity as i32,
                severity_text: text.to_owned(),
                body: event.body.as_ref().map(|body| any(&Value::Str(body.clone()))),
                attributes: key_values(&event.attrs),
                trace_id: event.context.map(|(trace, _)| trace.0.to_vec()).unwrap_or_default(),
                span_id: event.context.map(|(_, span)| span.0.to_vec()).unwrap_or_default(),
                event_name: event.name.clone(),
                ..LogRecord::default()
            }
        })
        .collect();
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(resource(service_name)),
            scope_logs: vec![ScopeLogs {
                scope: Some(scope()),
                log_records,
                ..ScopeLogs::default()
            }],
            ..ResourceLogs::default()
        }],
    }
}

/// The cumulative metrics at `now` as one metrics export request.
pub fn metrics_request(
    service_name: &str,
    metrics: &Metrics,
    now: u64,
) -> ExportMetricsServiceRequest {
    let cumulative = AggregationTemporality::Cumulative as i32;
    let mut out: Vec<Metric> = Vec::new();
    for ((name, attrs), value) in &metrics.sums {
        let point = NumberDataPoint {
            attributes: string_pairs(attrs),
            start_time_unix_nano: metrics.start,
            time_unix_nano: now,
            value: Some(number_data_point::Value::AsDouble(*value)),
            ..NumberDataPoint::default()
        };
        match out.iter_mut().find(|metric| metric.name == *name) {
            Some(Metric { data: Some(metric::Data::Sum(sum)), .. }) => sum.data_points.push(point),
            _ => out.push(Metric {
                name: (*name).to_owned(),
                unit: unit_of(name).to_owned(),
                data: Some(metric::Data::Sum(Sum {
                    data_points: vec![point],
                    aggregation_temporality: cumulative,
                    is_monotonic: true,
                })),
                ..Metric::default()
            }),
        }
    }
    for ((name, attrs), histogram) in &metrics.histograms {
        let point = HistogramDataPoint {
            attributes: string_pairs(attrs),
            start_time_unix_nano: metrics.start,
            time_unix_nano: now,
            count: histogram.count,
            sum: Some(histogram.sum),
            bucket_counts: histogram.buckets.clone(),
            explicit_bounds: LATENCY_BOUNDS_MS.to_vec(),
            min: Some(histogram.min),
            max: Some(histogram.max),
            ..HistogramDataPoint::default()
        };
        match out.iter_mut().find(|metric| metric.name == *name) {
            Some(Metric { data: Some(metric::Data::Histogram(h)), .. }) => {
                h.data_points.push(point)
            }
            _ => out.push(Metric {
                name: (*name).to_owned(),
                unit: "ms".to_owned(),
                data: Some(metric::Data::Histogram(Histogram {
                    data_points: vec![point],
                    aggregation_temporality: cumulative,
                })),
                ..Metric::default()
            }),
        }
    }
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(resource(service_name)),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(scope()),
                metrics: out,
                ..ScopeMetrics::default()
            }],
            ..ResourceMetrics::default()
        }],
    }
}

fn unit_of(name: &str) -> &'static str {
    match name {
        "keel.token.usage" => "{token}",
        "keel.cost.usage" => "USD",
        _ => "1",
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::super::model::{SpanId, TraceId};
    use super::*;

    #[test]
    fn a_span_round_trips_through_the_protobuf_encoding() {
        let record = SpanRecord {
            trace: TraceId([7; 16]),
            span: SpanId([1; 8]),
            parent: Some(SpanId([2; 8])),
            name: "execute_tool read_file".into(),
            start: 10,
            end: 20,
            attrs: vec![("gen_ai.tool.name", "read_file".into())],
            error: None,
        };
        let bytes = traces_request("keel", &[record]).encode_to_vec();
        let back = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
        let span = &back.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(span.parent_span_id, vec![2; 8]);
        assert_eq!(span.name, "execute_tool read_file");
        let mut metrics = Metrics::default();
        metrics.add("keel.token.usage", vec![("type", "input".into())], 5.0);
        metrics.record("keel.tool.duration", vec![("tool", "shell".into())], 3.0);
        let request = metrics_request("keel", &metrics, 99);
        assert_eq!(request.resource_metrics[0].scope_metrics[0].metrics.len(), 2);
    }
}
