//! Where a detached run goes once it is accepted, and where a run goes on when its invocation
//! ends. Locally a detached run runs on a task of this process (and a run never outlasts its
//! process); on Lambda the function invokes itself asynchronously (`InvocationType=Event`),
//! because an environment may be frozen as soon as the answer is sent.

use crate::agent::detached::Admission;
use serde::{Deserialize, Serialize};

/// The key that marks a self-invocation's event (a Function URL event never has it at the top).
pub(crate) const EVENT_KEY: &str = "aguiDetachedRun";
/// The key that marks the event of an invocation that takes a run over from the last one.
pub(crate) const CONTINUE_KEY: &str = "aguiContinuedRun";

/// An accepted run, as handed to where it runs: the request as the caller sent it (parsed again
/// there with the same rules) and what admission already did.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DetachedRequest {
    pub principal: String,
    pub run_id: String,
    pub agent_type: String,
    /// The `RunAgentInput` body as received.
    pub body: String,
    /// Each binary part's internal path, by (message, part), as checked at admission.
    pub attachments: Vec<(usize, usize, String)>,
    pub admission: Admission,
}

/// How accepted runs leave the answering request.
pub(crate) enum Dispatcher {
    /// A task of this process (the local server; nothing freezes it).
    Local,
    /// An asynchronous invocation of this function.
    #[cfg(feature = "aws")]
    Lambda(std::sync::Arc<LambdaInvoker>),
}

impl Dispatcher {
    /// Where runs go on when their invocation ends: the next invocation, under Lambda.
    pub(crate) fn continuations(
        &self,
    ) -> Option<std::sync::Arc<dyn crate::agent::continuation::Continuations>> {
        match self {
            Dispatcher::Local => None,
            #[cfg(feature = "aws")]
            Dispatcher::Lambda(invoker) => Some(invoker.clone()),
        }
    }
}

impl Dispatcher {
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Dispatcher::Local => "detached runs on local tasks",
            #[cfg(feature = "aws")]
            Dispatcher::Lambda(invoker) if invoker.emulated => {
                "detached runs by self-invocation (emulator: not awaited)"
            }
            #[cfg(feature = "aws")]
            Dispatcher::Lambda(_) => "detached runs by asynchronous self-invocation",
        }
    }
}

/// Invokes this function with `InvocationType=Event` through the Lambda Invoke API, signed with
/// SigV4 (the SDK's Lambda client would add megabytes for this one call).
#[cfg(feature = "aws")]
pub(crate) struct LambdaInvoker {
    pub http: reqwest::Client,
    /// `https://lambda.<region>.amazonaws.com`, `AWS_ENDPOINT_URL_LAMBDA`, or an emulator's
    /// (`SELF_INVOKE_ENDPOINT`, or `cargo lambda watch`'s own, found from its runtime API).
    pub endpoint: String,
    pub function_name: String,
    /// The version this environment runs, so a detached run runs the same code.
    pub qualifier: Option<String>,
    pub region: String,
    /// `None` for an emulator on this machine, which checks no signature: no AWS account needed.
    pub credentials: Option<aws_credential_types::provider::SharedCredentialsProvider>,
    /// `cargo lambda watch` has no asynchronous invocations: its Invoke API answers when the
    /// function has, and it runs one invocation at a time, so the call is sent and not awaited.
    pub emulated: bool,
}

/// Where this function's Invoke API is, from the environment a Lambda runtime (or emulator) gave
/// the process.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct InvokeEnvironment {
    /// `AWS_LAMBDA_RUNTIME_API`: `cargo lambda watch` sets `http://127.0.0.1:9000/.rt/<name>`.
    pub runtime_api: Option<String>,
    /// `AWS_LAMBDA_FUNCTION_NAME`.
    pub function_name: Option<String>,
    /// `AWS_LAMBDA_FUNCTION_VERSION`.
    pub version: Option<String>,
    /// `SELF_INVOKE_ENDPOINT`.
    pub self_invoke_endpoint: Option<String>,
    /// `AWS_ENDPOINT_URL_LAMBDA`: an emulator that queues asynchronous invocations as Lambda does.
    pub lambda_endpoint: Option<String>,
}

/// How this function invokes itself, decided from its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InvokeTarget {
    /// Not under a Lambda runtime: runs go on in this process.
    Local,
    /// An emulator on this machine: its Invoke API, unsigned, not awaited.
    Emulator { endpoint: String },
    /// Lambda's Invoke API (or `AWS_ENDPOINT_URL_LAMBDA`'s), signed with the function's credentials.
    Aws { endpoint: Option<String> },
}

impl InvokeEnvironment {
    pub(crate) fn from_process(self_invoke_endpoint: Option<String>) -> Self {
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.trim().is_empty())
        };
        Self {
            runtime_api: var("AWS_LAMBDA_RUNTIME_API"),
            function_name: var("AWS_LAMBDA_FUNCTION_NAME"),
            version: var("AWS_LAMBDA_FUNCTION_VERSION"),
            self_invoke_endpoint,
            lambda_endpoint: var("AWS_ENDPOINT_URL_LAMBDA"),
        }
    }

    pub(crate) fn target(&self) -> InvokeTarget {
        if self.runtime_api.is_none() || self.function_name.is_none() {
            return InvokeTarget::Local;
        }
        if let Some(endpoint) = &self.self_invoke_endpoint {
            return InvokeTarget::Emulator {
                endpoint: endpoint.clone(),
            };
        }
        if self.lambda_endpoint.is_some() {
            return InvokeTarget::Aws {
                endpoint: self.lambda_endpoint.clone(),
            };
        }
        match self
            .runtime_api
            .as_deref()
            .and_then(cargo_lambda_invoke_api)
        {
            Some(endpoint) => InvokeTarget::Emulator { endpoint },
            None => InvokeTarget::Aws { endpoint: None },
        }
    }
}

/// `cargo lambda watch`'s Invoke API, from the runtime API it gives its function
/// (`http://127.0.0.1:9000/.rt/agui-lambda` → `http://127.0.0.1:9000`): the same server. Only
/// its shape, on this machine: another emulator's runtime API does not take invocations.
fn cargo_lambda_invoke_api(runtime_api: &str) -> Option<String> {
    let url = reqwest::Url::parse(runtime_api).ok()?;
    if !url.path().starts_with("/.rt/") {
        return None;
    }
    let host = url
        .host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let local = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified());
    local.then(|| {
        let host = if host == "0.0.0.0" {
            "127.0.0.1"
        } else {
            url.host_str().unwrap_or(host)
        };
        match url.port() {
            Some(port) => format!("{}://{host}:{port}", url.scheme()),
            None => format!("{}://{host}", url.scheme()),
        }
    })
}

/// Where accepted runs go: under the Lambda runtime, an asynchronous invocation of this very
/// function (an emulator's Invoke API without credentials, found by itself under `cargo lambda
/// watch`); elsewhere a local task. The AWS configuration is loaded only when Lambda's own
/// Invoke API is to be called.
#[cfg(feature = "aws")]
pub(crate) async fn dispatcher(environment: &InvokeEnvironment) -> Result<Dispatcher, String> {
    let (InvokeTarget::Emulator { .. } | InvokeTarget::Aws { .. }, Some(function_name)) =
        (environment.target(), environment.function_name.clone())
    else {
        return Ok(Dispatcher::Local);
    };
    let http = reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(2))
        .build()
        .map_err(|error| error.to_string())?;
    let invoker = match environment.target() {
        InvokeTarget::Emulator { endpoint } => LambdaInvoker {
            http,
            endpoint,
            function_name,
            qualifier: None,
            region: "us-east-1".to_owned(),
            credentials: None,
            emulated: true,
        },
        InvokeTarget::Aws { endpoint } => {
            let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
            let region = aws
                .region()
                .map(ToString::to_string)
                .unwrap_or_else(|| "us-east-1".to_owned());
            let credentials = aws.credentials_provider().ok_or_else(|| {
                "no AWS credentials to invoke this function (under an emulator, set \
                 SELF_INVOKE_ENDPOINT to its Invoke API)"
                    .to_owned()
            })?;
            LambdaInvoker {
                http,
                endpoint: endpoint
                    .unwrap_or_else(|| format!("https://lambda.{region}.amazonaws.com")),
                function_name,
                qualifier: environment
                    .version
                    .clone()
                    .filter(|version| version != "$LATEST"),
                region,
                credentials: Some(credentials),
                emulated: false,
            }
        }
        InvokeTarget::Local => return Ok(Dispatcher::Local),
    };
    Ok(Dispatcher::Lambda(std::sync::Arc::new(invoker)))
}

#[cfg(feature = "aws")]
impl LambdaInvoker {
    /// Invokes this function asynchronously with `request` as its event.
    pub(super) async fn send(&self, request: &DetachedRequest) -> Result<(), String> {
        let payload = serde_json::json!({ EVENT_KEY: request });
        self.invoke(payload.to_string().into_bytes()).await
    }

    async fn invoke(&self, payload: Vec<u8>) -> Result<(), String> {
        self.invoke_with(payload, self.emulated).await
    }

    /// Sends the invocation; `detached` does not await the answer (an emulator that runs one
    /// invocation at a time answers only once the invoked one has).
    async fn invoke_with(&self, payload: Vec<u8>, detached: bool) -> Result<(), String> {
        use aws_credential_types::provider::ProvideCredentials;
        use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
        let mut url = format!(
            "{}/2015-03-31/functions/{}/invocations",
            self.endpoint.trim_end_matches('/'),
            self.function_name
        );
        if let Some(qualifier) = &self.qualifier {
            url.push_str("?Qualifier=");
            url.push_str(qualifier);
        }
        let headers = [
            ("content-type", "application/json"),
            ("x-amz-invocation-type", "Event"),
        ];
        let mut signed = Vec::new();
        if let Some(provider) = &self.credentials {
            let credentials = provider.provide_credentials().await.map_err(|error| {
                format!(
                    "no AWS credentials to invoke this function ({error}); under an emulator, \
                     set SELF_INVOKE_ENDPOINT to its Invoke API"
                )
            })?;
            let identity = credentials.into();
            let params = aws_sigv4::sign::v4::SigningParams::builder()
                .identity(&identity)
                .region(&self.region)
                .name("lambda")
                .time(std::time::SystemTime::now())
                .settings(SigningSettings::default())
                .build()
                .map_err(|error| error.to_string())?
                .into();
            let signable = SignableRequest::new(
                "POST",
                &url,
                headers.iter().copied(),
                SignableBody::Bytes(&payload),
            )
            .map_err(|error| error.to_string())?;
            let (instructions, _) = sign(signable, &params)
                .map_err(|error| error.to_string())?
                .into_parts();
            signed.extend(
                instructions
                    .headers()
                    .map(|(name, value)| (name.to_owned(), value.to_owned())),
            );
        }
        let mut request = self.http.post(&url).body(payload);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        for (name, value) in signed {
            request = request.header(name, value);
        }
        // Lambda continues the caller's X-Ray trace in the invocation it starts.
        if let Some(trace) = crate::telemetry::otel::xray_header(&tracing::Span::current()) {
            request = request.header("x-amzn-trace-id", trace);
        }
        let call = request.send();
        if detached {
            tokio::spawn(async move {
                if let Err(error) = call.await {
                    tracing::error!(%error, "the emulator's Invoke API failed");
                }
            });
            return Ok(());
        }
        let response = call.await.map_err(|error| error.to_string())?;
        let status = response.status();
        if status == reqwest::StatusCode::ACCEPTED {
            Ok(())
        } else {
            let text = response.text().await.unwrap_or_default();
            Err(format!(
                "Invoke answered {status}: {}",
                text.chars().take(300).collect::<String>()
            ))
        }
    }
}

/// A run's next runner is the next asynchronous invocation of this function. Lambda delivers
/// it at least once; the run's lease makes every delivery but one do nothing.
#[cfg(feature = "aws")]
#[async_trait::async_trait]
impl crate::agent::continuation::Continuations for LambdaInvoker {
    async fn send(
        &self,
        continuation: &crate::agent::continuation::Continuation,
    ) -> Result<(), String> {
        let payload = serde_json::json!({ CONTINUE_KEY: continuation });
        self.invoke(payload.to_string().into_bytes()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn under(runtime_api: &str) -> InvokeEnvironment {
        InvokeEnvironment {
            runtime_api: Some(runtime_api.to_owned()),
            function_name: Some("agui-lambda".to_owned()),
            ..InvokeEnvironment::default()
        }
    }

    #[test]
    fn cargo_lambda_watch_is_found_by_its_runtime_api_and_needs_no_aws_account() {
        assert_eq!(
            under("http://127.0.0.1:9000/.rt/agui-lambda").target(),
            InvokeTarget::Emulator {
                endpoint: "http://127.0.0.1:9000".to_owned()
            }
        );
        assert_eq!(
            under("http://0.0.0.0:9000/.rt/agui-lambda").target(),
            InvokeTarget::Emulator {
                endpoint: "http://127.0.0.1:9000".to_owned()
            }
        );
    }

    #[test]
    fn lambda_and_other_emulators_invoke_as_configured() {
        // Lambda's own runtime API: its Invoke API, with the function's credentials.
        assert_eq!(
            under("127.0.0.1:9001").target(),
            InvokeTarget::Aws { endpoint: None }
        );
        let queued = InvokeEnvironment {
            lambda_endpoint: Some("http://127.0.0.1:4566".to_owned()),
            ..under("http://127.0.0.1:9000/.rt/agui-lambda")
        };
        assert_eq!(
            queued.target(),
            InvokeTarget::Aws {
                endpoint: Some("http://127.0.0.1:4566".to_owned())
            }
        );
        let named = InvokeEnvironment {
            self_invoke_endpoint: Some("http://127.0.0.1:9999".to_owned()),
            ..under("127.0.0.1:9001")
        };
        assert_eq!(
            named.target(),
            InvokeTarget::Emulator {
                endpoint: "http://127.0.0.1:9999".to_owned()
            }
        );
        assert_eq!(InvokeEnvironment::default().target(), InvokeTarget::Local);
    }
}
