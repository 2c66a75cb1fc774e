//! The A2UI v0.9 JSON Schemas (tests/fixtures/a2ui-v0.9, the spec's files as published), for
//! tests that check every operation this module emits: `server_to_client.json` with the basic
//! catalog standing in for the `catalog.json` it refers to, as the spec resolves it.

use serde_json::Value;

const BASE: &str = "https://a2ui.org/specification/v0_9/";

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/a2ui-v0.9/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"));
    serde_json::from_str(&text).unwrap()
}

/// A validator of one server→client message (formats checked, as the spec's `oneOf`s of
/// formats need).
pub(crate) fn operation_validator() -> jsonschema::Validator {
    let catalog = fixture("catalogs/basic/catalog.json");
    let registry = jsonschema::Registry::new()
        .add(
            format!("{BASE}common_types.json"),
            fixture("json/common_types.json"),
        )
        .unwrap()
        .add(
            format!("{BASE}catalogs/basic/catalog.json"),
            catalog.clone(),
        )
        .unwrap()
        .add(format!("{BASE}catalog.json"), catalog)
        .unwrap()
        .prepare()
        .unwrap();
    jsonschema::options()
        .offline()
        .should_validate_formats(true)
        .with_registry(&registry)
        .build(&fixture("json/server_to_client.json"))
        .unwrap()
}

/// Every operation valid, or the first mistake with the operation it is in.
pub(crate) fn assert_valid_operations(operations: &[Value]) {
    let validator = operation_validator();
    for operation in operations {
        if let Err(error) = validator.validate(operation) {
            panic!(
                "not a valid A2UI v0.9 message: {error} at {}\n{operation:#}",
                error.instance_path()
            );
        }
    }
}
