//! One way to assemble the application: [`AppBuilder`] builds from configuration every part its
//! caller does not supply (your tools, a test's scripted model or its own store), then the agent
//! and the app around it.

use super::models::{Models, models_from_config, transcriber_from_config};
use super::store::{blobs_from_config, store_from_config};
use super::tools::{add_mcp_tools, mcp_server_offers_nothing};
use super::{StartupError, authenticator, subagents};
use crate::agent::{Agent, AgentProfile, AgentSettings, ToolRegistry};
use crate::api::{ApiSettings, App};
use crate::auth::Authenticator;
use crate::config::Config;
#[cfg(any(test, feature = "test-utils"))]
use crate::model::ModelProvider;
use crate::store::{Blobs, ThreadStore};
use crate::telemetry::emf::Emf;
use std::sync::Arc;

/// The application as configured, with the parts a caller supplies in place of the ones
/// configuration would build. The parts it builds are set up at once; the MCP servers' tools
/// are added to the server tools, supplied or built-in, either way.
///
/// ```ignore
/// let app = AppBuilder::new(&config).tools(tools).build().await?;
/// // A test: a scripted model and its own store, the rest as configured.
/// let app = AppBuilder::new(&config).model(model).store(store).build().await?;
/// ```
pub struct AppBuilder<'a> {
    config: &'a Config,
    models: Option<Models>,
    store: Option<Arc<dyn ThreadStore>>,
    auth: Option<Authenticator>,
    tools: Option<ToolRegistry>,
    blobs: Option<Arc<Blobs>>,
    metrics: Option<Emf>,
}

impl<'a> AppBuilder<'a> {
    /// Every part from `config`.
    pub fn new(config: &'a Config) -> Self {
        Self {
            config,
            models: None,
            store: None,
            auth: None,
            tools: None,
            blobs: None,
            metrics: None,
        }
    }

    /// The server tools (usually the built-ins plus yours) instead of the built-ins alone;
    /// `APPROVAL_REQUIRED_TOOLS` and `TOOL_RESULT_MAX_BYTES` apply to them.
    pub fn tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = Some(tools);
        self
    }

    /// One model for the default agent and every `AGENT_PROFILES` profile (a test's scripted
    /// model).
    #[cfg(any(test, feature = "test-utils"))]
    pub fn model(self, model: Arc<dyn ModelProvider>) -> Self {
        self.models(model.into())
    }

    /// The models, the profiles' own among them (see [`models_from_config`]).
    #[cfg(any(test, feature = "test-utils"))]
    pub fn models(mut self, models: Models) -> Self {
        self.models = Some(models);
        self
    }

    /// The thread store.
    #[cfg(any(test, feature = "test-utils"))]
    pub fn store(mut self, store: Arc<dyn ThreadStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Who may call.
    #[cfg(any(test, feature = "test-utils"))]
    pub fn auth(mut self, auth: Authenticator) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Where the v1 agent API's uploads go.
    #[cfg(any(test, feature = "test-utils"))]
    pub fn blobs(mut self, blobs: Arc<Blobs>) -> Self {
        self.blobs = Some(blobs);
        self
    }

    /// Where the EMF metrics go.
    #[cfg(any(test, feature = "test-utils"))]
    pub fn metrics(mut self, metrics: Emf) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The app: the parts not supplied built from configuration (the MCP servers listed while
    /// the model, store and authenticator are set up), then the agent around them.
    pub async fn build(self) -> Result<App, StartupError> {
        let config = self.config;
        let mut tools = match self.tools {
            Some(tools) => tools,
            None => ToolRegistry::with_builtins()?,
        };
        // Each part's future on the heap: together they are too large for a test thread's stack.
        let (models, store, auth, views, blobs, dispatcher, secrets, transcriber) = tokio::try_join!(
            supplied_or(self.models, Box::pin(models_from_config(config))),
            supplied_or(self.store, Box::pin(store_from_config(config))),
            supplied_or(self.auth, Box::pin(authenticator(&config.auth))),
            Box::pin(add_mcp_tools(config, &mut tools)),
            supplied_or(self.blobs.map(Some), Box::pin(blobs_from_config(config))),
            Box::pin(dispatcher_from_config(config)),
            Box::pin(subagents::subagent_secrets(config)),
            Box::pin(transcriber_from_config(config)),
        )?;
        let mut config = config.clone();
        config.subagents.secret_headers = secrets.headers;
        config.subagents.a2a_secrets = secrets.a2a;
        let metrics = self.metrics.or_else(|| metrics_from_config(&config));
        Ok(assemble(&config, models, store, auth, tools, transcriber)?
            .with_mcp_views(views)
            .with_blobs(blobs)
            .with_dispatcher(dispatcher)
            .with_metrics(metrics))
    }
}

/// The part a caller supplied, else the one `built` builds.
async fn supplied_or<T>(
    supplied: Option<T>,
    built: impl Future<Output = Result<T, StartupError>>,
) -> Result<T, StartupError> {
    match supplied {
        Some(part) => Ok(part),
        None => built.await,
    }
}

/// The agent and the app around it, from their parts; applies `APPROVAL_REQUIRED_TOOLS` and
/// `TOOL_RESULT_MAX_BYTES` to `tools`.
fn assemble(
    config: &Config,
    models: Models,
    store: Arc<dyn ThreadStore>,
    auth: Authenticator,
    mut tools: ToolRegistry,
    transcriber: Option<Arc<crate::agent::Transcriber>>,
) -> Result<App, StartupError> {
    for name in &config.agent.approval_required_tools {
        match tools.require_approval(name) {
            // A tool of an MCP server that was skipped at this cold start: not offered, so
            // nothing to gate, and a server down must not stop start-up.
            Err(crate::agent::tools::RegistryError::Unknown(_))
                if mcp_server_offers_nothing(config, &tools, name) =>
            {
                tracing::warn!(
                    tool = %name,
                    "APPROVAL_REQUIRED_TOOLS names a tool of an MCP server that offers no tools at this cold start"
                );
            }
            other => other?,
        }
    }
    // Registered once for every profile; an agent whose memory is off does not offer them.
    if config.memory.enabled || config.profiles.values().any(|p| p.memory == Some(true)) {
        let memories: Arc<dyn crate::store::Memories> = store.clone();
        for tool in crate::agent::memory::tools(memories, config.memory) {
            tools.add(tool)?;
        }
    }
    tools.set_max_result_bytes(config.tools.max_result_bytes);
    let profiles = agent_profiles(config, &models, &tools)?;
    let agent = Agent::new(
        models.default,
        Arc::new(tools),
        store,
        AgentSettings {
            context: config.context.settings(),
            memory: config.memory,
            subagents: config.subagents.settings,
            a2ui: config.a2ui,
            ..config.agent.clone()
        },
    )
    .with_summarizer(models.summarizer)
    .with_transcriber(transcriber)
    .with_profiles(profiles)?
    .serving_any_agent_type(config.subagents.demo_team)
    .serving(config.subagents.default_profile.as_deref())?;
    if !config.profiles.is_empty() && !config.subagents.demo_team {
        tracing::info!(
            profiles = ?agent.profile_names(),
            "AGENT_PROFILES: forwardedProps.agent_type must name one of these"
        );
    }
    Ok(App::new(
        agent,
        auth,
        ApiSettings {
            limits: config.limits.clone(),
            ping_interval: config.http.ping_interval,
            run_max: config.http.run_max,
            stream_max: config.http.stream_max,
            deadline_margin: config.http.deadline_margin,
            cors_allowed_origins: config.http.cors_allowed_origins.clone(),
            dev_ui: config.http.dev_ui,
            agentcore: config.hosting.mode == crate::config::Hosting::AgentCore,
            a2a_public_url: config.http.a2a_public_url.clone(),
        },
    )
    .with_copilotkit(copilotkit_settings(config)))
}

/// What CopilotKit's routes announce and serve beyond the agent: the profiles' descriptions,
/// suggestions and voice input as configured, and A2UI when an agent may paint it.
fn copilotkit_settings(config: &Config) -> crate::api::CopilotKitSettings {
    crate::api::CopilotKitSettings {
        descriptions: config
            .profiles
            .iter()
            .filter_map(|(name, profile)| Some((name.clone(), profile.description.clone()?)))
            .collect(),
        default_description: None,
        suggestions: config.copilotkit.suggestions,
        transcription_max_bytes: config
            .copilotkit
            .transcription
            .as_ref()
            .map(|transcription| transcription.max_bytes),
        generative_ui: generative_ui(config),
    }
}

/// `/info`'s generative-UI flags. A2UI is on when `A2UI` or a profile's `a2ui` is anything but
/// `off` (in `auto` the render tool goes to clients that declare they paint, as CopilotKit's page
/// does once told A2UI is on); `a2ui.agents` names the agents that paint when some do not.
fn generative_ui(config: &Config) -> crate::api::GenerativeUi {
    use crate::genui::a2ui::Mode;
    let mode_of = |profile: Option<&str>| {
        profile
            .and_then(|name| config.profiles.get(name)?.a2ui)
            .unwrap_or(config.a2ui.mode)
    };
    let default = mode_of(config.subagents.default_profile.as_deref());
    let agents: Vec<(&str, Mode)> = std::iter::once(("default", default))
        .chain(
            config
                .profiles
                .keys()
                .map(|name| (name.as_str(), mode_of(Some(name)))),
        )
        .collect();
    let painting: Vec<String> = agents
        .iter()
        .filter(|(_, mode)| *mode != Mode::Off)
        .map(|(name, _)| (*name).to_owned())
        .collect();
    crate::api::GenerativeUi {
        a2ui: !painting.is_empty(),
        a2ui_agents: (!painting.is_empty() && painting.len() < agents.len()).then_some(painting),
        // `OPEN_GENERATIVE_UI`: CopilotKit's page offers `generateSandboxedUi` once told.
        open_generative_ui: config.tools.open_generative_ui,
    }
}

/// `AGENT_PROFILES` as the agent takes them. A tool of an MCP server that offers nothing at
/// this cold start is left out of the profile with a warning (a server down must not stop
/// start-up, as for `APPROVAL_REQUIRED_TOOLS`); any other unknown name stops it.
fn agent_profiles(
    config: &Config,
    models: &Models,
    tools: &ToolRegistry,
) -> Result<Vec<(String, AgentProfile)>, StartupError> {
    let http = subagents::remote_client(config)?;
    let a2a = crate::agent::subagents::shared_client(http.clone());
    config
        .profiles
        .iter()
        .map(|(name, profile)| {
            let offered = profile.tools.as_ref().map(|names| {
                names
                    .iter()
                    .filter(|tool| {
                        let skipped =
                            !tools.contains(tool) && mcp_server_offers_nothing(config, tools, tool);
                        if skipped {
                            tracing::warn!(
                                profile = %name,
                                %tool,
                                "AGENT_PROFILES names a tool of an MCP server that offers no tools at this cold start; the profile goes without it"
                            );
                        }
                        !skipped
                    })
                    .cloned()
                    .collect()
            });
            let agent_profile = AgentProfile {
                system_prompt: profile.system_prompt.clone(),
                model: models.profiles.get(name).cloned(),
                tools: offered,
                context_tokens: profile.context_tokens,
                memory: profile.memory,
                subagents: subagents::subagents_of(config, profile, (&http, &a2a))?,
                subagent_visibility: profile.subagent_visibility,
                a2ui: profile.a2ui,
            };
            Ok((name.clone(), agent_profile))
        })
        .collect()
}

/// Where detached runs go: under the Lambda runtime, an asynchronous invocation of this very
/// function (`SELF_INVOKE_ENDPOINT` for an emulator's Invoke API); elsewhere a local task.
pub(crate) async fn dispatcher_from_config(
    config: &Config,
) -> Result<crate::api::dispatch::Dispatcher, StartupError> {
    let environment = crate::api::dispatch::InvokeEnvironment::from_process(
        config.store.self_invoke_endpoint.clone(),
    );
    #[cfg(feature = "aws")]
    {
        crate::api::dispatch::dispatcher(&environment)
            .await
            .map_err(StartupError::SelfInvoke)
    }
    #[cfg(not(feature = "aws"))]
    {
        let _ = environment;
        Ok(crate::api::dispatch::Dispatcher::Local)
    }
}

/// The EMF metrics writer, when `EMF_METRICS` is on.
pub(crate) fn metrics_from_config(config: &Config) -> Option<crate::telemetry::emf::Emf> {
    let telemetry = &config.telemetry;
    telemetry.emf.then(|| {
        crate::telemetry::emf::Emf::stdout(&telemetry.metrics_namespace, &telemetry.service_name)
    })
}

#[cfg(test)]
mod tests {
    use super::generative_ui;
    use crate::config::tests::config;

    fn a2ui_of(pairs: &[(&str, &str)]) -> (bool, Option<Vec<String>>) {
        let flags = generative_ui(&config(pairs).unwrap());
        (flags.a2ui, flags.a2ui_agents)
    }

    #[test]
    fn copilotkit_hears_of_a2ui_when_an_agent_may_paint_and_which_ones_when_not_all() {
        let off = r#"{"plain": {"a2ui": "off"}, "forms": {}}"#;
        let on = r#"{"forms": {"a2ui": "on"}, "plain": {}}"#;
        assert_eq!(a2ui_of(&[]), (true, None), "auto by default");
        assert_eq!(a2ui_of(&[("A2UI", "off")]), (false, None));
        assert_eq!(a2ui_of(&[("A2UI", "on")]), (true, None));
        assert_eq!(
            a2ui_of(&[("AGENT_PROFILES", off)]),
            (true, Some(vec!["default".to_owned(), "forms".to_owned()]))
        );
        assert_eq!(
            a2ui_of(&[("A2UI", "off"), ("AGENT_PROFILES", on)]),
            (true, Some(vec!["forms".to_owned()]))
        );
        assert_eq!(
            a2ui_of(&[
                ("A2UI", "off"),
                ("AGENT_PROFILES", on),
                ("AGENT_DEFAULT_PROFILE", "forms")
            ]),
            (true, Some(vec!["default".to_owned(), "forms".to_owned()])),
            "the default agent is the profile it serves"
        );
    }
}
