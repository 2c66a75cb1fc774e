use super::*;
use crate::genui::a2ui::spec_schema::assert_valid_operations;

#[test]
fn schema_loads() {
    assert_valid_operations(&[
        json!({"version":"v0.9","createSurface":{"surfaceId":"a","catalogId":"b"}}),
    ]);
}
