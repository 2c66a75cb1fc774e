use super::*;
use crate::genui::a2ui::catalog::tests::fixture;

/// The four context entries CopilotKit 1.74's page sends with the basic catalog.
pub(crate) fn copilotkit_context() -> Vec<ContextEntry> {
    fixture("copilotkit-1.74-a2ui-context.json")
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| ContextEntry {
            description: entry["description"].as_str().unwrap().to_owned(),
            value: entry["value"].as_str().unwrap().to_owned(),
        })
        .collect()
}

fn entry(description: &str, value: &str) -> ContextEntry {
    ContextEntry {
        description: description.to_owned(),
        value: value.to_owned(),
    }
}

#[test]
fn copilotkit_declares_its_catalog_and_gets_the_spec_form_under_its_id() {
    let made = offer(Mode::Auto, &copilotkit_context(), true).unwrap();
    assert_eq!(
        made.renderer,
        Renderer::Spec {
            catalog_id: BASIC_CATALOG_ID.to_owned()
        }
    );
    assert_eq!(made.catalog.components.len(), 18);
    assert!(
        made.catalog
            .component("Slider")
            .unwrap()
            .prop("step")
            .is_some(),
        "its own catalog"
    );
    // The setting does not change what a declaring client gets.
    assert_eq!(
        offer(Mode::AssistantUi, &copilotkit_context(), true),
        Some(made.clone())
    );
    assert_eq!(offer(Mode::Off, &copilotkit_context(), true), None);
}

#[test]
fn a_client_that_declares_nothing_gets_nothing_unless_the_profile_says_how_it_paints() {
    let plain = [entry("the user's locale", "en-GB")];
    assert_eq!(offer(Mode::Auto, &plain, false), None);
    let on = offer(Mode::On, &plain, false).unwrap();
    assert_eq!(
        on.renderer,
        Renderer::Spec {
            catalog_id: BASIC_CATALOG_ID.to_owned()
        }
    );
    let aui = offer(Mode::AssistantUi, &plain, false).unwrap();
    assert_eq!(aui.renderer, Renderer::AssistantUi);
    let names: Vec<&str> = aui
        .catalog
        .components
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ASSISTANT_UI_COMPONENTS);
}

#[test]
fn a2ui_catalog_available_alone_means_the_basic_catalog() {
    let made = offer(Mode::Auto, &[], true).unwrap();
    assert_eq!(made.catalog, Catalog::basic());
}

#[test]
fn a_custom_catalog_id_is_read_from_the_capabilities_entry_when_no_schema_is_sent() {
    let capabilities = entry(
        "A2UI catalog capabilities: available catalog IDs and custom component definitions the client can render.",
        "Available A2UI catalog:\n- https://example.com/my_catalog.json\n  Extends the basic catalog with all standard components plus:",
    );
    let made = offer(Mode::Auto, &[capabilities], false).unwrap();
    assert_eq!(
        made.renderer,
        Renderer::Spec {
            catalog_id: "https://example.com/my_catalog.json".to_owned()
        }
    );
}

#[test]
fn the_model_never_sees_copilotkits_a2ui_entries() {
    let mut context = copilotkit_context();
    context.push(entry("the user's locale", "en-GB"));
    let kept = model_context(&context);
    assert_eq!(kept, vec![entry("the user's locale", "en-GB")]);
    let dropped: usize = context
        .iter()
        .filter(|e| is_a2ui_entry(e))
        .map(|e| e.value.len())
        .sum();
    assert!(dropped > 55_000, "about 56 KB a run: {dropped}");
}

#[test]
fn modes_read_as_written() {
    assert_eq!("auto".parse(), Ok(Mode::Auto));
    assert_eq!("assistant-ui".parse(), Ok(Mode::AssistantUi));
    assert_eq!("On".parse::<Mode>(), Err(()));
    for mode in [Mode::Auto, Mode::Off, Mode::On, Mode::AssistantUi] {
        assert_eq!(
            mode.name().parse(),
            Ok(mode),
            "{mode:?} reads back as it is named"
        );
    }
}
