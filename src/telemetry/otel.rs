//! OpenTelemetry traces: spans with target [`super::TRACE_TARGET`] exported over OTLP/HTTP
//! (protobuf) by a batch processor, X-Ray-compatible trace ids, the X-Ray trace header or a W3C
//! `traceparent` as the parent, and a flush that Lambda awaits before an invocation ends.

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry::{Array, StringValue, Value};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::registry::LookupSpan;

static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();
static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// One export may take this long; a collector that hangs must not hold an invocation for long.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// The X-Ray trace header of the invocation (`Root=1-…;Parent=…;Sampled=…`), as Lambda hands it
/// over; put in a request's extensions, it parents the request's spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceParent(pub String);

#[derive(Debug, thiserror::Error)]
pub(crate) enum OtelError {
    #[error("no tokio runtime to send spans on")]
    NoRuntime,
    #[error("the OTLP exporter: {0}")]
    Exporter(String),
}

pub(super) fn set_capture_content(capture: bool) {
    CAPTURE_CONTENT.store(capture, Ordering::Relaxed);
}

/// `OTEL_CAPTURE_CONTENT=true`: spans may carry prompts, answers and tool arguments.
pub(crate) fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

/// The exporting layer for spans of [`super::TRACE_TARGET`], sending to `endpoint` (the full
/// `…/v1/traces` URL).
pub(super) fn layer<S>(
    service_name: &str,
    endpoint: &str,
) -> Result<Box<dyn Layer<S> + Send + Sync>, OtelError>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
{
    use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
    let handle = tokio::runtime::Handle::try_current().map_err(|_| OtelError::NoRuntime)?;
    let client = reqwest::Client::builder()
        .timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|error| OtelError::Exporter(error.to_string()))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(TokioHttp { client, handle })
        .with_endpoint(endpoint)
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|error| OtelError::Exporter(error.to_string()))?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        // Trace ids an X-Ray backend accepts: the first 32 bits are the start time.
        .with_id_generator(opentelemetry_aws::trace::XrayIdGenerator::default())
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(service_name.to_owned())
                .build(),
        )
        .build();
    let tracer = provider.tracer("agui-lambda");
    let _ = PROVIDER.set(provider);
    Ok(tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_filter(filter_fn(|metadata| {
            metadata.target() == super::TRACE_TARGET
        }))
        .boxed())
}

/// Exports every ended span now. Lambda may freeze the environment as soon as an invocation
/// ends, so the Lambda handler awaits this before it does. Nothing to do without an exporter.
pub async fn flush() {
    let Some(provider) = PROVIDER.get() else {
        return;
    };
    let provider = provider.clone();
    // The batch processor's flush blocks until its own thread has exported.
    match tokio::task::spawn_blocking(move || provider.force_flush()).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%error, "exporting spans failed"),
        Err(error) => tracing::warn!(%error, "exporting spans failed"),
    }
}

/// Makes `span` a child of the invocation's X-Ray trace, else of the request's W3C
/// `traceparent`; a span without either starts a trace of its own. A disabled span is left alone.
pub(crate) fn set_parent(
    span: &tracing::Span,
    xray: Option<&TraceParent>,
    headers: &http::HeaderMap,
) {
    if span.is_disabled() {
        return;
    }
    let from_xray = xray
        .and_then(|header| {
            opentelemetry_aws::trace::xray_propagator::span_context_from_str(&header.0)
        })
        .map(|context| opentelemetry::Context::new().with_remote_span_context(context));
    let parent = from_xray.unwrap_or_else(|| {
        TraceContextPropagator::new().extract(&opentelemetry_http::HeaderExtractor(headers))
    });
    if parent.span().span_context().is_valid() {
        let _ = span.set_parent(parent);
    }
}

/// The 32-hex-digit trace id of `span`, else of the X-Ray header (the same id without its
/// dashes); `None` when neither is known.
pub(crate) fn trace_id(span: &tracing::Span, xray: Option<&TraceParent>) -> Option<String> {
    if !span.is_disabled() {
        let context = span.context();
        let span_context = context.span().span_context().clone();
        if span_context.is_valid() {
            return Some(span_context.trace_id().to_string());
        }
    }
    xray.and_then(|header| {
        opentelemetry_aws::trace::xray_propagator::span_context_from_str(&header.0)
    })
    .map(|context| context.trace_id().to_string())
}

/// `span`'s context as an X-Ray trace header (`Root=…;Parent=…;Sampled=…`), for a call that
/// Lambda should continue in the same trace (a self-invocation); none when it is not traced.
pub(crate) fn xray_header(span: &tracing::Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    let span_context = context.span().span_context().clone();
    opentelemetry_aws::trace::xray_propagator::span_context_to_string(&span_context)
}

/// `span`'s context as a W3C `traceparent`: what a run keeps for its next runner, whose span is
/// then its child (one trace across the run's invocations); none when it is not traced.
pub(crate) fn traceparent(span: &tracing::Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    let mut carrier = std::collections::HashMap::new();
    TraceContextPropagator::new().inject_context(&span.context(), &mut carrier);
    carrier.remove("traceparent")
}

/// Makes `span` a child of the span `traceparent` names (see [`traceparent`]).
pub(crate) fn continue_trace(span: &tracing::Span, traceparent: &str) {
    let mut headers = http::HeaderMap::new();
    if let Ok(value) = http::HeaderValue::from_str(traceparent) {
        headers.insert("traceparent", value);
    }
    set_parent(span, None, &headers);
}

/// Sets a string-array attribute (`gen_ai.response.finish_reasons`), which a tracing field
/// cannot carry.
pub(crate) fn set_strings(span: &tracing::Span, key: &'static str, values: Vec<String>) {
    if span.is_disabled() {
        return;
    }
    let values: Vec<StringValue> = values.into_iter().map(StringValue::from).collect();
    span.set_attribute(key, Value::Array(Array::String(values)));
}

/// The exporter's HTTP client. The batch processor exports from a thread of its own, outside
/// tokio, where reqwest cannot run: each export is sent on the function's runtime instead.
#[derive(Debug)]
struct TokioHttp {
    client: reqwest::Client,
    handle: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl HttpClient for TokioHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let answered = self
            .handle
            .spawn(async move {
                let response = client.execute(request).await?;
                let status = response.status();
                let headers = response.headers().clone();
                let body = response.bytes().await?;
                Ok::<_, reqwest::Error>((status, headers, body))
            })
            .await??;
        let (status, headers, body) = answered;
        let mut response = Response::new(body);
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_xray_root_is_the_trace_id_without_dashes() {
        let header = TraceParent(
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1".into(),
        );
        assert_eq!(
            trace_id(&tracing::Span::none(), Some(&header)).as_deref(),
            Some("5759e988bd862e3fe1be46a994272793")
        );
        assert_eq!(trace_id(&tracing::Span::none(), None), None);
        assert_eq!(
            trace_id(
                &tracing::Span::none(),
                Some(&TraceParent("Root=garbage".into()))
            ),
            None
        );
    }
}
