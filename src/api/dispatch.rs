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
    /// `https://lambda.<region>.amazonaws.com`, `AWS_ENDPOINT_URL_LAMBDA`, or `cargo lambda
    /// watch`'s (`SELF_INVOKE_ENDPOINT`).
    pub endpoint: String,
    pub function_name: String,
    /// The version this environment runs, so a detached run runs the same code.
    pub qualifier: Option<String>,
    pub region: String,
    pub credentials: aws_credential_types::provider::SharedCredentialsProvider,
    /// `cargo lambda watch` has no asynchronous invocations: its Invoke API answers when the
    /// function has, and it runs one invocation at a time, so the call is sent and not awaited.
    pub emulated: bool,
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
        let credentials = self
            .credentials
            .provide_credentials()
            .await
            .map_err(|error| format!("no AWS credentials: {error}"))?;
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
        let headers = [
            ("content-type", "application/json"),
            ("x-amz-invocation-type", "Event"),
        ];
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
        let mut request = self.http.post(&url).body(payload);
        for (name, value) in headers.into_iter().chain(instructions.headers()) {
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
