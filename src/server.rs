//! What the binary runs: telemetry, configuration, the runtime, the app with its tools, then the
//! Lambda runtime or the local server (and the `create-table` command). The default binary is
//! [`main_with_tools`] with no extra tools; a binary of yours adds its own. Knows nothing of
//! `lambda_http`: `api` does.

use crate::agent::tools::{RegistryError, ToolRegistry};
use crate::api;
use crate::config::{Config, ConfigError, Hosting, ModelChoice, RuntimeFlavor};
use crate::startup::{self, StartupError};
use crate::telemetry;
use std::process::ExitCode;
use std::sync::Arc;

/// Why the function could not start or stopped serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A setting is missing or out of its bounds.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// One of your tools could not be registered.
    #[error("your tools: {0}")]
    Tools(#[from] RegistryError),
    /// The model, store, authenticator or MCP servers could not be set up.
    #[error(transparent)]
    Startup(#[from] StartupError),
    /// The tokio runtime could not be built.
    #[error("could not start the tokio runtime: {0}")]
    Runtime(std::io::Error),
    /// The local server could not bind its address.
    #[error("{}", listen_error(.addr, .source))]
    Listen {
        /// The address from `HOST` and `PORT`.
        addr: std::net::SocketAddr,
        /// Why binding failed.
        source: std::io::Error,
    },
    /// The Lambda runtime client failed.
    #[error("the Lambda runtime stopped: {0}")]
    Lambda(String),
    /// `create-table` was asked of a build without DynamoDB.
    #[error("create-table needs the `aws` cargo feature, which this build leaves out")]
    NoAws,
}

/// Why the address could not be had, and the setting that chooses another.
fn listen_error(addr: &std::net::SocketAddr, source: &std::io::Error) -> String {
    match source.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "could not listen on {addr}: the address is already in use (another agui-lambda, or \
             another server, has port {port}); stop it, or choose another port with PORT \
             (PORT={other} cargo run)",
            port = addr.port(),
            other = addr.port().wrapping_add(1).max(1024),
        ),
        _ => format!("could not listen on {addr} (set by HOST and PORT): {source}"),
    }
}

/// The function's `main`: reads the configuration from the environment, builds the app with
/// the built-in tools, the tools `register` adds and the MCP servers' tools, and serves it
/// under Lambda (when `AWS_LAMBDA_RUNTIME_API` is set) or as a local HTTP server. The
/// argument `create-table` creates `THREADS_TABLE` instead. Errors are printed for the person
/// who started the binary; the exit code says whether it failed.
///
/// ```no_run
/// use agui_lambda::tools::{ToolBuilder, ToolContext, ToolOutput};
/// use serde_json::Value;
///
/// fn main() -> std::process::ExitCode {
///     agui_lambda::main_with_tools(|tools| {
///         tools.add(
///             ToolBuilder::new("ping", "Answers pong")
///                 .handler(|_: Value, _: ToolContext| async { Ok(ToolOutput::text("pong")) }),
///         )
///     })
/// }
/// ```
pub fn main_with_tools<F>(register: F) -> ExitCode
where
    F: FnOnce(&mut ToolRegistry) -> Result<(), RegistryError>,
{
    let outcome = Config::from_env()
        .map_err(ServeError::from)
        .and_then(|config| {
            let runtime = runtime(config.runtime).map_err(ServeError::Runtime)?;
            // Inside the runtime: the trace exporter sends on it.
            runtime.block_on(async { telemetry::init(&telemetry_settings(&config)) });
            let mut tools = ToolRegistry::with_builtins()?;
            register(&mut tools)?;
            runtime.block_on(serve(config, tools))
        });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // Display, not Debug: the message is written for the person who started the binary.
            eprintln!("Error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn telemetry_settings(config: &Config) -> telemetry::Settings {
    telemetry::Settings {
        traces_endpoint: config.telemetry.traces_endpoint.clone(),
        service_name: config.telemetry.service_name.clone(),
        capture_content: config.telemetry.capture_content,
    }
}

fn runtime(flavor: RuntimeFlavor) -> std::io::Result<tokio::runtime::Runtime> {
    match flavor {
        RuntimeFlavor::CurrentThread => tokio::runtime::Builder::new_current_thread(),
        RuntimeFlavor::MultiThread => tokio::runtime::Builder::new_multi_thread(),
    }
    .enable_all()
    .build()
}

/// Builds the app from `config` and `tools` (plus the MCP servers' tools) and serves it until
/// the Lambda runtime stops, or the local server gets `SIGTERM` or `SIGINT` and has drained.
/// Runs `create-table` when the process's first argument is that.
pub async fn serve(config: Config, tools: ToolRegistry) -> Result<(), ServeError> {
    if std::env::args().nth(1).as_deref() == Some("create-table") {
        return create_table(&config).await;
    }
    let under_lambda = std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some();
    if !under_lambda {
        startup::check_threads_table(&config).await?;
    }
    let app = Arc::new(
        startup::AppBuilder::new(&config)
            .tools(tools)
            .build()
            .await?,
    );
    tracing::info!(setup = %app.describe(), runtime = ?config.runtime, "agui-lambda ready to start");
    if matches!(config.model.provider, ModelChoice::Demo) {
        tracing::warn!(
            "no OPENAI_API_KEY or OPENAI_BASE_URL: answering with the scripted demo model"
        );
    }
    if config.subagents.demo_team {
        tracing::info!(
            "nothing configured: the demo team serves, `assistant` delegating to `researcher` \
             (\"Ask the researcher: …\"); AGENT_PROFILES sets your own"
        );
    }
    match app.auth_mode() {
        "none" => tracing::warn!(
            "AUTH_MODE=none: every caller is `anonymous` and can read and continue every thread; \
             use AUTH_MODE=api-key, jwt or iam for anything but local development"
        ),
        "iam" if !under_lambda => tracing::warn!(
            "AUTH_MODE=iam only works behind an AWS_IAM Function URL: every local request gets 401"
        ),
        _ => {}
    }
    if under_lambda {
        api::shutdown::exit_on_lambda_shutdown();
        return api::lambda::run(app)
            .await
            .map_err(|err| ServeError::Lambda(err.to_string()));
    }
    serve_locally(app, &config).await
}

/// The local server (a container's, AgentCore Runtime's) until `SIGTERM` or `SIGINT`, then a
/// clean stop: the runs drain (a second signal stops them at once), the connections close, the
/// spans are exported.
async fn serve_locally(app: Arc<api::App>, config: &Config) -> Result<(), ServeError> {
    // Listening before the server is: a stop signal from the first moment is a clean stop.
    let mut signals = api::shutdown::StopSignals::listen();
    let addr = config.http.listen;
    let server = api::local::Server::bind(app.clone(), addr)
        .await
        .map_err(|source| ServeError::Listen { addr, source })?;
    let addr = server.addr;
    match config.hosting.mode {
        Hosting::AgentCore => tracing::info!(
            "listening on http://{addr} (AgentCore Runtime: POST /invocations, GET /ping)"
        ),
        _ => tracing::info!("listening on http://{addr} (POST /agent, GET /threads/{{id}})"),
    }
    let signal = signals.next().await;
    tracing::info!(signal, "stop signal received");
    let drained = app
        .drain(config.hosting.shutdown_grace, async {
            let again = signals.next().await;
            tracing::warn!(signal = again, "second stop signal: the runs stop now");
        })
        .await;
    server.close(CLOSE_WAIT).await;
    telemetry::flush().await;
    tracing::info!(
        runs = drained.in_flight,
        stopped = drained.stopped,
        settled = drained.settled,
        "stopped"
    );
    Ok(())
}

/// Once the runs have ended, how long their streams' last bytes have to reach the clients.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// `create-table`: creates `THREADS_TABLE` as template.yaml declares it, for DynamoDB Local
/// during development (on AWS the template creates it). Safe to run again: an existing table
/// with the same key schema is fine, one with another is an error.
#[cfg(feature = "aws")]
async fn create_table(config: &Config) -> Result<(), ServeError> {
    use crate::store::dynamo::TableSetup;
    let table = config.store.threads_table.as_deref().unwrap_or_default();
    match startup::create_threads_table(config).await? {
        TableSetup::Created => tracing::info!(table, "table created"),
        TableSetup::Existed => tracing::info!(table, "table exists, with the expected key schema"),
    }
    Ok(())
}

#[cfg(not(feature = "aws"))]
async fn create_table(_config: &Config) -> Result<(), ServeError> {
    Err(ServeError::NoAws)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_in_use_is_named_with_the_setting_that_moves_it() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let source = std::net::TcpListener::bind(addr).unwrap_err();
        let message = ServeError::Listen { addr, source }.to_string();
        assert!(
            message.starts_with(&format!(
                "could not listen on {addr}: the address is already in use"
            )),
            "{message}"
        );
        assert!(
            message.contains("choose another port with PORT"),
            "{message}"
        );
    }
}
