//! Named agent profiles (`AGENT_PROFILES`): a system prompt, a model and a set of server tools
//! per name, chosen per request by the v1 agent API's `forwardedProps.agent_type`. Each profile is
//! resolved once, at start-up, into the parts an [`Agent`] holds, so choosing one for a request
//! only clones `Arc`s.
//!
//! The rule: with no profile configured, the default agent serves every `agent_type`; with
//! profiles configured, `agent_type` must name one of them. `memory` is the v1 agent API's internal
//! automation mode and is refused either way. Parsing the setting is `config`'s job and building
//! the profiles' models `startup`'s; this module knows neither, nor HTTP.

use super::tools::{RegistryError, ToolRegistry};
use super::{Agent, AgentSettings};
use crate::model::ModelProvider;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The `agent_type` the v1 agent API reserves for automated tasks: never a profile, never served over
/// HTTP.
pub(crate) const INTERNAL_AGENT_TYPE: &str = "memory";

/// The longest `agent_type` an error repeats: a longer one names no profile anyway (names are
/// at most 64 characters), and an error must not carry a caller's megabytes into a log.
const ECHOED_CHARS: usize = 64;

/// One profile as start-up hands it to [`Agent::with_profiles`]; a part left `None` is the
/// default agent's.
#[derive(Clone, Default)]
pub(crate) struct AgentProfile {
    /// Replaces `AGENT_SYSTEM_PROMPT`; the client's `context` entries are still appended. An
    /// empty prompt sends none.
    pub system_prompt: Option<String>,
    /// The model provider of this profile (`startup` builds one per profile, sharing the HTTP
    /// client).
    pub model: Option<Arc<dyn ModelProvider>>,
    /// The server tools this profile offers, by name; each must be one of the agent's.
    pub tools: Option<Vec<String>>,
    /// This profile's model's input window, instead of the default agent's setting.
    pub context_tokens: Option<u32>,
    /// Whether this profile's runs keep long-term memories, instead of `MEMORY`.
    pub memory: Option<bool>,
    /// The agents this profile may delegate to.
    pub subagents: Vec<super::subagents::Subagent>,
    /// How its runs show their sub-agents' work, instead of `SUBAGENT_VISIBILITY`.
    pub subagent_visibility: Option<super::subagents::Visibility>,
    /// When its runs offer the A2UI render tool, instead of `A2UI`.
    pub a2ui: Option<crate::genui::a2ui::Mode>,
}

/// Why the profiles could not be set up; stops start-up.
#[derive(Debug, thiserror::Error)]
pub enum ProfileSetupError {
    #[error("profile {profile}: no server tool is named {tool}")]
    UnknownTool { profile: String, tool: String },
    #[error("profile name \"memory\" is reserved for the v1 agent API's internal automation mode")]
    Internal,
    /// A tool of the profile could not be registered again (it was once, so this is a bug).
    #[error("profile {profile}: {source}")]
    Tool {
        profile: String,
        #[source]
        source: RegistryError,
    },
    /// A sub-agent would be offered to the model under the name of one of its tools.
    #[error("profile {profile}: sub-agent {name} has the name of one of its server tools")]
    SubagentNameTaken { profile: String, name: String },
    /// `AGENT_DEFAULT_PROFILE` names no profile.
    #[error("AGENT_DEFAULT_PROFILE: no profile is named {0}")]
    UnknownDefault(String),
}

/// Why a request's `agent_type` chooses no agent: the caller's fault, for a 422.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProfileError {
    /// Profiles are configured and this is none of them (at most 64 characters of it are kept).
    #[error("agent_type {0:?} names no agent profile of this deployment")]
    Unknown(String),
    /// `memory`, which the v1 agent API keeps for automated tasks.
    #[error("agent_type \"memory\" is internal and not accepted over HTTP")]
    Internal,
}

/// A profile resolved against the default agent: exactly the parts an [`Agent`] of it differs in.
#[derive(Clone)]
struct Resolved {
    model: Arc<dyn ModelProvider>,
    tools: Arc<ToolRegistry>,
    settings: Arc<AgentSettings>,
    subagents: Arc<Vec<super::subagents::Subagent>>,
}

/// The profiles by name; empty when none is configured.
#[derive(Clone, Default)]
pub(super) struct Profiles {
    by_name: BTreeMap<String, Resolved>,
    /// An `agent_type` that names no profile gets the agent asked (the demo team's: nothing was
    /// configured, so every `agent_type` is served as without profiles).
    any_agent_type: bool,
}

impl Profiles {
    /// Whether any profile keeps long-term memories.
    pub(super) fn any_memory(&self) -> bool {
        self.by_name
            .values()
            .any(|profile| profile.settings.memory.enabled)
    }

    /// `name (model), …` for the start-up log, or nothing without profiles.
    pub(super) fn describe(&self) -> String {
        if self.by_name.is_empty() {
            return String::new();
        }
        let names: Vec<String> = self
            .by_name
            .iter()
            .map(|(name, profile)| format!("{name} ({})", profile.model.identity().model))
            .collect();
        format!("; agent profiles: {}", names.join(", "))
    }
}

impl Agent {
    /// This agent with named profiles (`AGENT_PROFILES`), each resolved now against this
    /// agent's model, tools and settings. Call it after the agent's other settings are made: a
    /// profile keeps the settings it was resolved with. Refuses a profile named `memory` and a
    /// tool name this agent's registry lacks.
    pub(crate) fn with_profiles(
        mut self,
        profiles: impl IntoIterator<Item = (String, AgentProfile)>,
    ) -> Result<Self, ProfileSetupError> {
        let mut by_name = BTreeMap::new();
        for (name, profile) in profiles {
            if name == INTERNAL_AGENT_TYPE {
                return Err(ProfileSetupError::Internal);
            }
            let tools = match &profile.tools {
                Some(names) => {
                    // A profile with memory offers the memory tools whatever else it lists.
                    let mut names = names.clone();
                    if profile.memory.unwrap_or(self.settings.memory.enabled) {
                        for tool in super::memory::TOOL_NAMES {
                            if self.tools.contains(tool) && !names.iter().any(|n| n == tool) {
                                names.push(tool.to_owned());
                            }
                        }
                    }
                    Arc::new(filtered(&self.tools, &names, &name)?)
                }
                None => self.tools.clone(),
            };
            if let Some(taken) = profile
                .subagents
                .iter()
                .find(|subagent| tools.contains(&subagent.name))
            {
                return Err(ProfileSetupError::SubagentNameTaken {
                    profile: name,
                    name: taken.name.clone(),
                });
            }
            let settings = if profile.system_prompt.is_none()
                && profile.context_tokens.is_none()
                && profile.memory.is_none()
                && profile.subagent_visibility.is_none()
                && profile.a2ui.is_none()
            {
                self.settings.clone()
            } else {
                let mut settings = (*self.settings).clone();
                if let Some(prompt) = profile.system_prompt {
                    settings.system_prompt = Some(prompt);
                }
                if let Some(tokens) = profile.context_tokens {
                    settings.context.window_tokens = Some(tokens);
                }
                if let Some(memory) = profile.memory {
                    settings.memory.enabled = memory;
                }
                if let Some(visibility) = profile.subagent_visibility {
                    settings.subagents.visibility = visibility;
                }
                if let Some(mode) = profile.a2ui {
                    settings.a2ui.mode = mode;
                }
                Arc::new(settings)
            };
            let model = profile.model.unwrap_or_else(|| self.model.clone());
            by_name.insert(
                name,
                Resolved {
                    model,
                    tools,
                    settings,
                    subagents: Arc::new(profile.subagents),
                },
            );
        }
        self.profiles = Arc::new(Profiles {
            by_name,
            any_agent_type: false,
        });
        Ok(self)
    }

    /// With `any`, an `agent_type` that names no profile is served by the agent asked instead
    /// of refused: the demo team's rule, since nothing was configured.
    pub(crate) fn serving_any_agent_type(mut self, any: bool) -> Self {
        if any {
            let mut profiles = (*self.profiles).clone();
            profiles.any_agent_type = true;
            self.profiles = Arc::new(profiles);
        }
        self
    }

    /// The agent that serves a request whose `forwardedProps.agent_type` is `agent_type`: a
    /// cheap clone of this one with the profile's system prompt, model and tools, sharing the
    /// store and the runs in flight.
    ///
    /// With no profile configured, every `agent_type` but `memory` gets this agent as it is
    /// (a deployment without profiles has a single agent, whatever the caller calls it). With
    /// profiles configured, an `agent_type` that names none is [`ProfileError::Unknown`].
    /// `memory` is [`ProfileError::Internal`] either way: the v1 agent API refuses it over HTTP.
    pub(crate) fn profile(&self, agent_type: &str) -> Result<Agent, ProfileError> {
        if agent_type == INTERNAL_AGENT_TYPE {
            return Err(ProfileError::Internal);
        }
        if self.profiles.by_name.is_empty() {
            return Ok(self.clone());
        }
        let Some(profile) = self.profiles.by_name.get(agent_type) else {
            if self.profiles.any_agent_type {
                return Ok(self.clone());
            }
            return Err(ProfileError::Unknown(
                agent_type.chars().take(ECHOED_CHARS).collect(),
            ));
        };
        Ok(Agent {
            model: profile.model.clone(),
            tools: profile.tools.clone(),
            settings: profile.settings.clone(),
            subagents: profile.subagents.clone(),
            name: Some(Arc::from(agent_type)),
            ..self.clone()
        })
    }

    /// The agent the AG-UI routes serve when `AGENT_DEFAULT_PROFILE` names `profile`: that
    /// profile, with every profile still reachable by name.
    pub(crate) fn serving(self, profile: Option<&str>) -> Result<Agent, ProfileSetupError> {
        match profile {
            None => Ok(self),
            Some(name) => self
                .profile(name)
                .map_err(|_| ProfileSetupError::UnknownDefault(name.to_owned())),
        }
    }

    /// The configured profiles' names, sorted; empty when the default agent serves every request.
    pub(crate) fn profile_names(&self) -> Vec<&str> {
        self.profiles.by_name.keys().map(String::as_str).collect()
    }
}

/// A registry of the tools of `all` named in `names`, each behaving there as it does in `all`.
fn filtered(
    all: &ToolRegistry,
    names: &[String],
    profile: &str,
) -> Result<ToolRegistry, ProfileSetupError> {
    all.subset(names).map_err(|error| match error {
        RegistryError::Unknown(tool) => ProfileSetupError::UnknownTool {
            profile: profile.to_owned(),
            tool,
        },
        source => ProfileSetupError::Tool {
            profile: profile.to_owned(),
            source,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tools::ToolBuilder;
    use crate::agent::tools::ToolOutput;
    use crate::auth::Principal;
    use crate::model::ToolSpec;
    use crate::model::scripted::{ScriptedModel, ScriptedTurn};
    use crate::protocol::input::{ForwardedProps, RunInput};
    use crate::protocol::{Message, MessageId, RunId, ThreadId, UserContent};
    use crate::store::MemoryStore;
    use futures_util::StreamExt;
    use serde_json::{Value, json};
    use std::time::Duration;
    use tokio::time::Instant;

    /// The default agent: `get_current_time` and `lookup_order`, prompt "Be brief.".
    fn agent(model: &ScriptedModel) -> Agent {
        let mut tools = ToolRegistry::with_builtins().unwrap();
        let lookup = ToolBuilder::new("lookup_order", "Find an order")
            .parameters(json!({
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            }))
            .handler(|args: Value, _| async move {
                Ok(ToolOutput::json(
                    &json!({"order": args["order_id"], "status": "shipped"}),
                ))
            });
        tools.add(lookup).unwrap();
        tools.require_approval("get_current_time").unwrap();
        Agent::new(
            Arc::new(model.clone()),
            Arc::new(tools),
            Arc::new(MemoryStore::new()),
            AgentSettings {
                system_prompt: Some("Be brief.".into()),
                ..AgentSettings::default()
            },
        )
    }

    fn profile(prompt: Option<&str>, tools: Option<&[&str]>) -> AgentProfile {
        AgentProfile {
            system_prompt: prompt.map(str::to_owned),
            model: None,
            tools: tools.map(|names| names.iter().map(|name| (*name).to_owned()).collect()),
            context_tokens: None,
            memory: None,
            subagents: Vec::new(),
            subagent_visibility: None,
            a2ui: None,
        }
    }

    fn tool_names(agent: &Agent) -> Vec<String> {
        agent.tools.specs().map(|spec| spec.name.clone()).collect()
    }

    /// Runs one user message through `agent`; the events as JSON.
    async fn run(agent: &Agent, thread: &str, text: &str) -> Vec<Value> {
        let input = RunInput {
            thread_id: Some(ThreadId::parse(thread, 128).unwrap()),
            run_id: RunId::parse(format!("{thread}-run"), 128).unwrap(),
            parent_run_id: None,
            state: None,
            messages: vec![Message::User {
                id: MessageId::parse(format!("{thread}-m1"), 128).unwrap(),
                content: UserContent::Text(text.into()),
                name: None,
            }],
            tools: vec![],
            context: vec![],
            forwarded_props: ForwardedProps::default(),
            protocol_version: None,
            resume: Vec::new(),
            new_message_limits: None,
            skipped_parts: Vec::new(),
            skips_unusable_parts: false,
        };
        let prepared = agent
            .start(
                Principal::anonymous(),
                input,
                Instant::now() + Duration::from_secs(30),
            )
            .await
            .unwrap();
        let events: Vec<_> = prepared.into_events().collect().await;
        events
            .iter()
            .map(|event| serde_json::to_value(event).unwrap())
            .collect()
    }

    #[test]
    fn without_profiles_every_agent_type_but_memory_gets_the_default_agent() {
        let agent = agent(&ScriptedModel::default());
        assert!(agent.profile_names().is_empty());
        for agent_type in ["worker", "anything", ""] {
            let chosen = agent.profile(agent_type).unwrap();
            assert_eq!(chosen.settings.system_prompt.as_deref(), Some("Be brief."));
            assert_eq!(tool_names(&chosen), ["get_current_time", "lookup_order"]);
        }
        assert_eq!(agent.profile("memory").err(), Some(ProfileError::Internal));
        assert!(!agent.describe().contains("agent profiles"));
    }

    #[test]
    fn the_demo_team_serves_every_agent_type_as_its_coordinator() {
        let agent = agent(&ScriptedModel::default())
            .with_profiles([
                ("assistant".to_owned(), profile(None, None)),
                (
                    "researcher".to_owned(),
                    profile(Some("Research."), Some(&[])),
                ),
            ])
            .unwrap()
            .serving_any_agent_type(true)
            .serving(Some("assistant"))
            .unwrap();
        let chosen = agent.profile("worker").unwrap();
        assert_eq!(chosen.name.as_deref(), Some("assistant"));
        let researcher = agent.profile("researcher").unwrap();
        assert_eq!(
            researcher.settings.system_prompt.as_deref(),
            Some("Research.")
        );
        assert_eq!(agent.profile("memory").err(), Some(ProfileError::Internal));
    }

    #[test]
    fn a_profile_brings_its_own_prompt_model_and_tools() {
        let default_model = ScriptedModel::default();
        let research_model: Arc<dyn ModelProvider> = Arc::new(ScriptedModel::default());
        let agent = agent(&default_model)
            .with_profiles([
                (
                    "support".to_owned(),
                    profile(Some("You help with orders."), Some(&["lookup_order"])),
                ),
                (
                    "research".to_owned(),
                    AgentProfile {
                        model: Some(research_model.clone()),
                        ..AgentProfile::default()
                    },
                ),
                ("quiet".to_owned(), profile(None, Some(&[]))),
            ])
            .unwrap();
        assert_eq!(agent.profile_names(), ["quiet", "research", "support"]);

        let support = agent.profile("support").unwrap();
        assert_eq!(
            support.settings.system_prompt.as_deref(),
            Some("You help with orders.")
        );
        assert_eq!(tool_names(&support), ["lookup_order"]);
        assert!(!support.tools.contains("get_current_time"));
        // What a profile leaves out is the default agent's; settings besides the prompt too.
        assert_eq!(support.settings.max_steps, agent.settings.max_steps);
        assert!(Arc::ptr_eq(&support.live, &agent.live));

        let research = agent.profile("research").unwrap();
        assert!(Arc::ptr_eq(&research.model, &research_model));
        assert_eq!(
            research.settings.system_prompt.as_deref(),
            Some("Be brief.")
        );
        assert_eq!(tool_names(&research), ["get_current_time", "lookup_order"]);

        assert!(tool_names(&agent.profile("quiet").unwrap()).is_empty());

        assert_eq!(
            agent.profile("worker").err(),
            Some(ProfileError::Unknown("worker".to_owned()))
        );
        assert_eq!(agent.profile("memory").err(), Some(ProfileError::Internal));
        let long = "x".repeat(10_000);
        let Some(ProfileError::Unknown(echoed)) = agent.profile(&long).err() else {
            panic!("a long agent_type is unknown");
        };
        assert_eq!(echoed.len(), 64);
        assert!(
            agent.describe().contains(
                "agent profiles: quiet (scripted), research (scripted), support (scripted)"
            )
        );
    }

    #[test]
    fn a_filtered_tool_keeps_its_schema_and_approval() {
        let agent = agent(&ScriptedModel::default())
            .with_profiles([(
                "clock".to_owned(),
                profile(None, Some(&["get_current_time", "get_current_time"])),
            )])
            .unwrap();
        let clock = agent.profile("clock").unwrap();
        assert!(clock.tools.needs_approval("get_current_time"));
        let specs: Vec<&ToolSpec> = clock.tools.specs().collect();
        let original: Vec<&ToolSpec> = agent
            .tools
            .specs()
            .filter(|spec| spec.name == "get_current_time")
            .collect();
        assert_eq!(specs, original);
    }

    #[test]
    fn profiles_that_name_an_unknown_tool_or_memory_are_refused() {
        let unknown = agent(&ScriptedModel::default())
            .with_profiles([("support".to_owned(), profile(None, Some(&["refund"])))])
            .err()
            .unwrap();
        assert_eq!(
            unknown.to_string(),
            "profile support: no server tool is named refund"
        );
        let internal = agent(&ScriptedModel::default())
            .with_profiles([("memory".to_owned(), profile(None, None))])
            .err()
            .unwrap();
        assert!(matches!(internal, ProfileSetupError::Internal));
    }

    #[tokio::test]
    async fn the_model_gets_the_profiles_prompt_and_only_its_tools() {
        let model = ScriptedModel::new([
            ScriptedTurn::tool_calls(None, &[("c1", "lookup_order", r#"{"order_id":"42"}"#)]),
            ScriptedTurn::text("Shipped."),
            // A tool the profile leaves out is not run, even when the model calls it.
            ScriptedTurn::tool_calls(None, &[("c2", "get_current_time", "{}")]),
            ScriptedTurn::text("No clock here."),
        ]);
        let agent = agent(&model)
            .with_profiles([(
                "support".to_owned(),
                profile(Some("You help with orders."), Some(&["lookup_order"])),
            )])
            .unwrap();
        let support = agent.profile("support").unwrap();

        let events = run(&support, "t-support", "where is order 42?").await;
        let result = events
            .iter()
            .find(|event| event["type"] == "TOOL_CALL_RESULT")
            .unwrap();
        assert_eq!(
            result["content"],
            json!({"order": "42", "status": "shipped"}).to_string()
        );
        let requests = model.requests();
        assert_eq!(requests[0].system.as_deref(), Some("You help with orders."));
        let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(offered, ["lookup_order"]);

        let events = run(&support, "t-clock", "what time is it?").await;
        let result = events
            .iter()
            .find(|event| event["type"] == "TOOL_CALL_RESULT")
            .unwrap();
        assert_eq!(
            result["content"],
            "Error: unknown tool \"get_current_time\""
        );
    }

    #[test]
    fn a_profile_can_turn_memory_on_with_its_tools_while_the_default_agent_keeps_it_off() {
        let store = Arc::new(MemoryStore::new());
        let mut tools = ToolRegistry::with_builtins().unwrap();
        let settings = crate::agent::memory::MemorySettings::default();
        for tool in crate::agent::memory::tools(store.clone(), settings) {
            tools.add(tool).unwrap();
        }
        let agent = Agent::new(
            Arc::new(ScriptedModel::default()),
            Arc::new(tools),
            store,
            AgentSettings::default(),
        )
        .with_profiles([
            (
                "remembers".to_owned(),
                AgentProfile {
                    tools: Some(vec!["get_current_time".to_owned()]),
                    memory: Some(true),
                    ..profile(None, None)
                },
            ),
            ("forgets".to_owned(), profile(None, None)),
        ])
        .unwrap();
        let offered = |agent: &Agent| -> Vec<String> {
            agent
                .tool_specs(&[], None)
                .into_iter()
                .map(|spec| spec.name)
                .collect()
        };
        let remembers = agent.profile("remembers").unwrap();
        assert!(remembers.settings.memory.enabled);
        assert_eq!(
            offered(&remembers),
            [
                "delete_memory",
                "get_current_time",
                "save_memory",
                "search_memories"
            ]
        );
        let forgets = agent.profile("forgets").unwrap();
        assert_eq!(offered(&forgets), ["get_current_time"]);
        assert!(!forgets.offers("save_memory"));
        assert!(
            agent.memories().is_some(),
            "the API serves a profile's memories"
        );
    }
}
