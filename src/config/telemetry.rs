//! The telemetry section: where traces go, the service name they and the metrics carry, whether
//! content is captured, and the EMF metrics record per run.

use super::vars::Vars;
use super::{ConfigError, Section};

/// Traces and metrics: `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
/// `OTEL_SERVICE_NAME`, `OTEL_CAPTURE_CONTENT`, `EMF_METRICS`, `METRICS_NAMESPACE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelemetryConfig {
    /// The full OTLP/HTTP traces URL; none exports nothing.
    pub traces_endpoint: Option<String>,
    pub service_name: String,
    pub capture_content: bool,
    /// One EMF metrics record per run on stdout (on under Lambda by default).
    pub emf: bool,
    pub metrics_namespace: String,
}

impl Section for TelemetryConfig {
    const SETTINGS: &'static [&'static str] = &[
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_SERVICE_NAME",
        "METRICS_NAMESPACE",
        "OTEL_CAPTURE_CONTENT",
        "EMF_METRICS",
    ];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(Self {
            traces_endpoint: traces_endpoint(vars)?,
            service_name: service_name(vars)?,
            metrics_namespace: metrics_namespace(vars)?,
            capture_content: vars.flag("OTEL_CAPTURE_CONTENT", false)?,
            emf: vars.flag("EMF_METRICS", vars.under_lambda())?,
        })
    }
}

/// The traces URL itself, else the collector's base URL with `/v1/traces`.
fn traces_endpoint(vars: &Vars) -> Result<Option<String>, ConfigError> {
    let traces = vars.text("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    let base = vars.text("OTEL_EXPORTER_OTLP_ENDPOINT");
    Ok(match (traces, base) {
        (Some(traces), _) => Some(url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces)?),
        (None, Some(base)) => Some(format!(
            "{}/v1/traces",
            url("OTEL_EXPORTER_OTLP_ENDPOINT", base)?.trim_end_matches('/')
        )),
        (None, None) => None,
    })
}

fn url(name: &'static str, value: String) -> Result<String, ConfigError> {
    if (value.starts_with("http://") || value.starts_with("https://")) && value.len() <= 2_048 {
        Ok(value)
    } else {
        Err(ConfigError::Invalid {
            name,
            expected: "an http:// or https:// URL",
            value,
        })
    }
}

/// `OTEL_SERVICE_NAME`, else the Lambda function's name.
fn service_name(vars: &Vars) -> Result<String, ConfigError> {
    let service_name = vars
        .text("OTEL_SERVICE_NAME")
        .or_else(|| vars.text("AWS_LAMBDA_FUNCTION_NAME"))
        .unwrap_or_else(|| "agui-lambda".to_owned());
    if service_name.chars().count() > 255 {
        return Err(ConfigError::Invalid {
            name: "OTEL_SERVICE_NAME",
            expected: "at most 255 characters (a CloudWatch dimension value)",
            value: service_name,
        });
    }
    Ok(service_name)
}

fn metrics_namespace(vars: &Vars) -> Result<String, ConfigError> {
    let namespace = vars
        .text("METRICS_NAMESPACE")
        .unwrap_or_else(|| crate::telemetry::emf::DEFAULT_NAMESPACE.to_owned());
    // CloudWatch's rule for namespaces; `AWS/` is AWS's own.
    let namespace_ok = namespace.len() <= 255
        && !namespace.starts_with("AWS/")
        && namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_/#: ".contains(c));
    if namespace_ok {
        Ok(namespace)
    } else {
        Err(ConfigError::Invalid {
            name: "METRICS_NAMESPACE",
            expected: "1-255 letters, digits or . - _ / # : and spaces, not starting with AWS/",
            value: namespace,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::ConfigError;
    use crate::config::tests::config;

    #[test]
    fn telemetry_is_off_locally_and_names_its_endpoint_service_and_namespace() {
        let local = config(&[]).unwrap().telemetry;
        assert_eq!(local.traces_endpoint, None);
        assert!(!local.emf && !local.capture_content);
        assert_eq!(
            (
                local.service_name.as_str(),
                local.metrics_namespace.as_str()
            ),
            ("agui-lambda", "AguiLambda")
        );
        let lambda = config(&[
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            ("AWS_LAMBDA_FUNCTION_NAME", "stack-agui"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            ("METRICS_NAMESPACE", ""),
        ])
        .unwrap()
        .telemetry;
        assert!(lambda.emf);
        assert_eq!(lambda.service_name, "stack-agui");
        assert_eq!(lambda.metrics_namespace, "AguiLambda");
        assert_eq!(
            lambda.traces_endpoint.as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        let traces = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://b/traces"),
        ])
        .unwrap()
        .telemetry;
        assert_eq!(traces.traces_endpoint.as_deref(), Some("https://b/traces"));
        for (name, value) in [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"),
            ("METRICS_NAMESPACE", "AWS/Lambda"),
            ("METRICS_NAMESPACE", "a,b"),
            ("OTEL_CAPTURE_CONTENT", "maybe"),
            ("EMF_METRICS", "2"),
        ] {
            assert!(
                matches!(config(&[(name, value)]), Err(ConfigError::Invalid { name: n, .. }) if n == name),
                "{name}={value}"
            );
        }
    }
}
