//! JSON values to and from the SDK's `Document` (tool inputs and input schemas).

use aws_smithy_types::{Document, Number};
use serde_json::Value;

pub(crate) fn to_document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => Document::Number(if let Some(u) = n.as_u64() {
            Number::PosInt(u)
        } else if let Some(i) = n.as_i64() {
            Number::NegInt(i)
        } else {
            Number::Float(n.as_f64().unwrap_or(0.0))
        }),
        Value::String(s) => Document::String(s.clone()),
        Value::Array(items) => Document::Array(items.iter().map(to_document).collect()),
        Value::Object(map) => Document::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), to_document(value)))
                .collect(),
        ),
    }
}

#[cfg(test)]
/// The JSON of a document. Object keys come out sorted (a `Document` object is a hash map);
/// a non-finite float, which JSON cannot hold, becomes `null`.
pub(crate) fn from_document(document: &Document) -> Value {
    match document {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => Value::from(*u),
        Document::Number(Number::NegInt(i)) => Value::from(*i),
        Document::Number(Number::Float(f)) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Document::String(s) => Value::String(s.clone()),
        Document::Array(items) => Value::Array(items.iter().map(from_document).collect()),
        Document::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key.clone(), from_document(value)))
                    .collect::<serde_json::Map<_, _>>(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn numbers_keep_their_kind() {
        assert_eq!(to_document(&json!(3)), Document::Number(Number::PosInt(3)));
        assert_eq!(
            to_document(&json!(-3)),
            Document::Number(Number::NegInt(-3))
        );
        assert_eq!(
            to_document(&json!(1.5)),
            Document::Number(Number::Float(1.5))
        );
        assert_eq!(
            from_document(&Document::Number(Number::Float(f64::NAN))),
            Value::Null
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            ".*".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(".{0,8}", inner, 0..6)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_json_value_survives_the_round_trip(value in json_value()) {
            prop_assert_eq!(from_document(&to_document(&value)), value);
        }
    }
}
