//! Whether the client can paint A2UI, and how: what it declares (CopilotKit's A2UI context
//! entries and `forwardedProps.a2uiCatalogAvailable`), weighed against the profile's setting.
//! Also the model's view of the context: CopilotKit's own A2UI entries (about 56 KB a run) are
//! left out, the compact description of the render tool takes their place.

use super::catalog::{BASIC_CATALOG_ID, Catalog};
use super::emit::{ASSISTANT_UI_CATALOG_ID, Renderer};
use crate::protocol::ContextEntry;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

/// When a profile offers the render tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// To clients that declare they paint A2UI.
    #[default]
    Auto,
    /// Never.
    Off,
    /// To every client; one that declares nothing gets the spec's form and the basic catalog.
    On,
    /// To every client; one that declares nothing gets assistant-ui's form.
    AssistantUi,
}

impl FromStr for Mode {
    type Err = ();

    fn from_str(value: &str) -> Result<Self, ()> {
        match value {
            "auto" => Ok(Self::Auto),
            "off" => Ok(Self::Off),
            "on" => Ok(Self::On),
            "assistant-ui" => Ok(Self::AssistantUi),
            _ => Err(()),
        }
    }
}

impl Mode {
    /// The setting's own spelling (`A2UI=auto`), as `GET /capabilities` reports it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Off => "off",
            Self::On => "on",
            Self::AssistantUi => "assistant-ui",
        }
    }
}

/// The components assistant-ui's renderer paints (`react-generative-ui` 0.0.16's A2UI convert).
pub(crate) const ASSISTANT_UI_COMPONENTS: [&str; 9] = [
    "Text",
    "Image",
    "Row",
    "Column",
    "Card",
    "Divider",
    "Button",
    "TextField",
    "CheckBox",
];

/// The description CopilotKit (`@copilotkit/a2ui-renderer`) and the A2UI middleware give the
/// catalog schema entry.
pub(crate) const SCHEMA_ENTRY: &str = "A2UI Component Schema";
/// CopilotKit's other A2UI entries, and the Node middleware's guide.
const OTHER_ENTRIES: [&str; 4] = [
    "A2UI catalog capabilities",
    "A2UI generation guidelines",
    "A2UI design guidelines",
    "A2UI render tool usage guide",
];

/// Whether a context entry is one of the A2UI entries a client sends for its renderer.
pub(crate) fn is_a2ui_entry(entry: &ContextEntry) -> bool {
    entry.description.starts_with(SCHEMA_ENTRY)
        || OTHER_ENTRIES
            .iter()
            .any(|prefix| entry.description.starts_with(prefix))
}

/// The context a model is given: every entry but the A2UI ones.
pub fn model_context(context: &[ContextEntry]) -> Vec<ContextEntry> {
    context
        .iter()
        .filter(|entry| !is_a2ui_entry(entry))
        .cloned()
        .collect()
}

/// What a run offers: the form its surfaces are painted in, and the catalog the model is told
/// about and held to. Kept in the run's record, so a runner that takes the run over offers the
/// same.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Offer {
    pub renderer: Renderer,
    #[serde(with = "shared")]
    pub catalog: Arc<Catalog>,
}

/// An `Arc<Catalog>` as its catalog.
mod shared {
    use super::{Arc, Catalog};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(
        catalog: &Arc<Catalog>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        catalog.as_ref().serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Arc<Catalog>, D::Error> {
        Catalog::deserialize(deserializer).map(Arc::new)
    }
}

/// The offer for a run: `None` when the render tool is not offered (it then costs nothing).
pub fn offer(mode: Mode, context: &[ContextEntry], catalog_available: bool) -> Option<Offer> {
    if mode == Mode::Off {
        return None;
    }
    if let Some(catalog) = declared(context, catalog_available) {
        return Some(Offer {
            renderer: Renderer::Spec {
                catalog_id: catalog.id.clone(),
            },
            catalog,
        });
    }
    match mode {
        Mode::On => Some(Offer {
            renderer: Renderer::Spec {
                catalog_id: BASIC_CATALOG_ID.to_owned(),
            },
            catalog: Catalog::basic(),
        }),
        Mode::AssistantUi => Some(Offer {
            renderer: Renderer::AssistantUi,
            catalog: Arc::new(
                Catalog::basic().subset(ASSISTANT_UI_CATALOG_ID, &ASSISTANT_UI_COMPONENTS),
            ),
        }),
        Mode::Auto | Mode::Off => None,
    }
}

/// The catalog a client declares: the components of its schema entry, else the basic catalog
/// under the id its capabilities entry names; `None` when it declares nothing.
fn declared(context: &[ContextEntry], catalog_available: bool) -> Option<Arc<Catalog>> {
    let schema = context
        .iter()
        .find(|entry| entry.description.starts_with(SCHEMA_ENTRY))
        .and_then(|entry| client_catalog(&entry.value));
    if let Some(catalog) = schema {
        return Some(catalog);
    }
    let capabilities = context
        .iter()
        .find(|entry| entry.description.starts_with(OTHER_ENTRIES[0]));
    if capabilities.is_none() && !catalog_available {
        return None;
    }
    let id = capabilities.and_then(|entry| catalog_id_in(&entry.value));
    match id {
        Some(id) if id != BASIC_CATALOG_ID => {
            let mut catalog = (*Catalog::basic()).clone();
            catalog.id = id;
            Some(Arc::new(catalog))
        }
        _ => Some(Catalog::basic()),
    }
}

/// The catalog of a client's schema entry. CopilotKit sends the same 50 KB on every run: the
/// last one read is kept with its text instead of being parsed again.
fn client_catalog(schema: &str) -> Option<Arc<Catalog>> {
    static LAST: Mutex<Option<(String, Arc<Catalog>)>> = Mutex::new(None);
    let mut last = LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((known, catalog)) = last.as_ref()
        && known == schema
    {
        return Some(catalog.clone());
    }
    let catalog = Arc::new(Catalog::from_client_schema(
        &serde_json::from_str(schema).ok()?,
    )?);
    *last = Some((schema.to_owned(), catalog.clone()));
    Some(catalog)
}

/// The first catalog id of CopilotKit's capabilities text (`- <id> (basic catalog)` or
/// `- <id>` lines under "Available A2UI catalog:").
fn catalog_id_in(text: &str) -> Option<String> {
    text.lines()
        .find_map(|line| line.strip_prefix("- "))
        .and_then(|rest| rest.split_whitespace().next())
        .filter(|id| !id.is_empty() && id.len() <= 512)
        .map(str::to_owned)
}

#[cfg(test)]
#[path = "client_tests.rs"]
pub(crate) mod tests;
