//! A provider's opaque reasoning artefact as it travels in AG-UI: the `encryptedValue` of a
//! reasoning message (and of `REASONING_ENCRYPTED_VALUE`). Clients keep it without reading it;
//! the prefix tells a signature from redacted reasoning when it comes back, and a value this
//! server did not make (another provider's) decodes to nothing and is never sent to a model.

use base64::Engine;

const SIGNATURE: &str = "signature:";
const REDACTED: &str = "redacted:";
const ITEM: &str = "openai-reasoning:";

/// What a reasoning block needs to be accepted back by the model that wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReasoningArtefact {
    /// The signature over a reasoning block's text (Claude's extended thinking).
    Signature(String),
    /// Reasoning the provider withheld, as the encrypted bytes it sent.
    Redacted(Vec<u8>),
    /// A whole reasoning item of the OpenAI Responses API (its encrypted content included), as
    /// JSON text only that provider reads.
    Item(String),
}

impl ReasoningArtefact {
    /// The `encryptedValue` form.
    pub(crate) fn encode(&self) -> String {
        match self {
            ReasoningArtefact::Signature(signature) => format!("{SIGNATURE}{signature}"),
            ReasoningArtefact::Redacted(bytes) => format!(
                "{REDACTED}{}",
                base64::engine::general_purpose::STANDARD.encode(bytes)
            ),
            ReasoningArtefact::Item(item) => format!("{ITEM}{item}"),
        }
    }

    /// What AG-UI 1.1's `encryptedValueType` calls this value.
    pub(crate) fn value_type(&self) -> &'static str {
        match self {
            ReasoningArtefact::Signature(_) => "agui-lambda.thinking-signature",
            ReasoningArtefact::Redacted(_) => "agui-lambda.redacted-thinking",
            ReasoningArtefact::Item(_) => "agui-lambda.openai-reasoning-item",
        }
    }

    /// Reads an `encryptedValue` back; `None` for a value of any other form.
    pub(crate) fn decode(value: &str) -> Option<Self> {
        if let Some(signature) = value.strip_prefix(SIGNATURE) {
            return (!signature.is_empty())
                .then(|| ReasoningArtefact::Signature(signature.to_owned()));
        }
        if let Some(item) = value.strip_prefix(ITEM) {
            return (!item.is_empty()).then(|| ReasoningArtefact::Item(item.to_owned()));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(value.strip_prefix(REDACTED)?)
            .ok()?;
        (!bytes.is_empty()).then_some(ReasoningArtefact::Redacted(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kinds_round_trip_and_foreign_values_decode_to_nothing() {
        for artefact in [
            ReasoningArtefact::Signature("EqQBCkgIARABGAIiQL".into()),
            ReasoningArtefact::Redacted(vec![0, 1, 2, 250]),
            ReasoningArtefact::Item(r#"{"type":"reasoning","id":"rs_1"}"#.into()),
        ] {
            assert_eq!(
                ReasoningArtefact::decode(&artefact.encode()),
                Some(artefact)
            );
        }
        assert_eq!(
            ReasoningArtefact::Redacted(vec![0, 1]).encode(),
            "redacted:AAE="
        );
        for foreign in [
            "gAAAAABo-openai-encrypted",
            "signature:",
            "redacted:%%",
            "redacted:",
            "openai-reasoning:",
            "",
        ] {
            assert_eq!(ReasoningArtefact::decode(foreign), None, "{foreign}");
        }
    }
}
