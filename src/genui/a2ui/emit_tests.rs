use super::*;
use crate::genui::a2ui::catalog::BASIC_CATALOG_ID;
use crate::genui::a2ui::spec_schema::assert_valid_operations;
use crate::genui::a2ui::validate::tests::form;

fn spec() -> Renderer {
    Renderer::Spec {
        catalog_id: BASIC_CATALOG_ID.to_owned(),
    }
}

fn surface(data: Value) -> Surface {
    Surface {
        surface_id: "who".to_owned(),
        components: form(),
        data: data.as_object().cloned().unwrap_or_default(),
    }
}

#[test]
fn a_surface_in_spec_form_is_three_valid_v0_9_messages_under_the_clients_catalog_id() {
    let operations = operations(&surface(json!({"name": "Ada"})), &spec());
    assert_valid_operations(&operations);
    assert_eq!(
        operations[0],
        json!({"version": "v0.9", "createSurface": {"surfaceId": "who", "catalogId": BASIC_CATALOG_ID}})
    );
    assert_eq!(
        operations[1]["updateComponents"]["components"],
        json!(form())
    );
    assert_eq!(
        operations[2],
        json!({"version": "v0.9", "updateDataModel": {"surfaceId": "who", "path": "/", "value": {"name": "Ada"}}})
    );
}

/// CopilotKit 1.74's `surfaceHasRenderableContent`: a surface whose components bind paths
/// paints only once some top-level data value is non-empty.
fn copilotkit_paints_at_once(operations: &[Value]) -> bool {
    let components: Vec<&Value> = operations
        .iter()
        .filter(|op| op.get("updateComponents").is_some())
        .collect();
    if components.is_empty() {
        return false;
    }
    if !serde_json::to_string(&components)
        .unwrap()
        .contains("\"path\"")
    {
        return true;
    }
    operations.iter().any(|op| {
        op["updateDataModel"]["value"]
            .as_object()
            .is_some_and(|value| {
                value.values().any(|x| match x {
                    Value::Array(items) => !items.is_empty(),
                    Value::Null => false,
                    Value::String(text) => !text.is_empty(),
                    _ => true,
                })
            })
    })
}

#[test]
fn a_form_whose_fields_start_empty_still_paints_at_once_in_copilotkit() {
    let empty = operations(&surface(json!({"name": ""})), &spec());
    assert_valid_operations(&empty);
    assert!(copilotkit_paints_at_once(&empty));
    assert_eq!(
        empty[2]["updateDataModel"]["value"],
        json!({"name": "", "_surface": "who"})
    );
    let filled = operations(&surface(json!({"name": "Ada"})), &spec());
    assert_eq!(
        filled[2]["updateDataModel"]["value"],
        json!({"name": "Ada"}),
        "no key added when not needed"
    );
}

#[test]
fn a_surface_with_no_data_and_no_binding_is_two_messages() {
    let static_card = Surface {
        surface_id: "hi".to_owned(),
        components: vec![json!({"id": "root", "component": "Text", "text": "Hello"})],
        data: Map::new(),
    };
    let operations = operations(&static_card, &spec());
    assert_eq!(operations.len(), 2);
    assert_valid_operations(&operations);
    assert!(copilotkit_paints_at_once(&operations));
}

#[test]
fn assistant_ui_gets_its_own_button_card_template_and_image_shapes() {
    let mut components = form();
    components.push(json!({"id": "list", "component": "Column", "children": {"componentId": "row", "path": "/people"}}));
    components.push(json!({"id": "pic", "component": "Image", "url": "https://example.com/a.png", "description": "A cat"}));
    let surface = Surface {
        surface_id: "who".to_owned(),
        components,
        data: Map::new(),
    };
    let operations = operations(&surface, &Renderer::AssistantUi);
    assert_eq!(
        operations[0]["createSurface"]["catalogId"],
        ASSISTANT_UI_CATALOG_ID
    );
    let painted = operations[1]["updateComponents"]["components"]
        .as_array()
        .unwrap();
    let by_id = |id: &str| painted.iter().find(|c| c["id"] == id).unwrap().clone();
    assert_eq!(
        by_id("send"),
        json!({"id": "send", "component": "Button", "variant": "primary", "label": "Send",
               "action": {"name": "submit", "context": {"name": {"path": "/name"}}}})
    );
    assert_eq!(
        by_id("root"),
        json!({"id": "root", "component": "Card", "children": ["body"]})
    );
    assert_eq!(
        by_id("list")["children"],
        json!({"template": {"componentId": "row", "path": "/people"}})
    );
    assert_eq!(by_id("pic")["alt"], "A cat");
    assert_eq!(
        by_id("name"),
        form()[3],
        "a TextField is the same in both forms"
    );
    assert_eq!(operations.len(), 2, "no data, no updateDataModel");
}

#[test]
fn the_lifecycle_states_carry_what_copilotkits_recovery_views_read() {
    assert_eq!(building(None), json!({"status": "building"}));
    assert_eq!(
        building(Some(40)),
        json!({"status": "building", "progressTokens": 40})
    );
    let errors = vec![ValidationError {
        code: super::super::validate::Code::NoRoot,
        path: "components".to_owned(),
        message: "No component has id 'root'".to_owned(),
    }];
    assert_eq!(
        retrying(2, 3, &errors),
        json!({"status": "retrying", "attempt": 2, "maxAttempts": 3,
               "errors": [{"code": "no_root", "path": "components", "message": "No component has id 'root'"}]})
    );
    let attempts: Vec<Attempt> = (1..=3)
        .map(|attempt| Attempt {
            attempt,
            ok: false,
            errors: errors.clone(),
        })
        .collect();
    let failed = failed(&attempts);
    assert_eq!(failed["status"], "failed");
    assert_eq!(
        failed["error"],
        "Failed to generate valid A2UI after 3 attempt(s)"
    );
    assert_eq!(failed["attempts"].as_array().unwrap().len(), 3);
    let exhausted: Value = serde_json::from_str(&exhausted_result(&attempts)).unwrap();
    assert_eq!(exhausted["code"], "a2ui_recovery_exhausted");
    assert_eq!(painted(vec![json!(1)]), json!({"a2ui_operations": [1]}));
}
