//! A provider's opaque artefacts on what a turn produced, besides reasoning (see
//! [`super::reasoning`]): on a tool call, Gemini's thought signature or the Responses API's item
//! id; on the assistant message, the Responses API's item id. Each travels in AG-UI as the
//! `encryptedValue` of its call or message and goes back only to the provider that made it: a
//! value of another form decodes to nothing.

const GEMINI_SIGNATURE: &str = "gemini-signature:";
const OPENAI_ITEM: &str = "openai-item:";

/// An artefact a provider needs back with the call or message it was given for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Artefact {
    /// Gemini's `thought_signature` (its OpenAI-compatible endpoint sends it as
    /// `extra_content.google.thought_signature`).
    GeminiSignature(String),
    /// The id of a Responses API output item (`fc_…`, `msg_…`): a reasoning item must be
    /// followed by the item it produced, matched by this id.
    OpenAiItem(String),
}

impl Artefact {
    /// The `encryptedValue` form.
    pub(crate) fn encode(&self) -> String {
        match self {
            Artefact::GeminiSignature(signature) => format!("{GEMINI_SIGNATURE}{signature}"),
            Artefact::OpenAiItem(id) => format!("{OPENAI_ITEM}{id}"),
        }
    }

    /// Reads an `encryptedValue` back; `None` for a value of any other form.
    pub(crate) fn decode(value: &str) -> Option<Self> {
        if let Some(signature) = value.strip_prefix(GEMINI_SIGNATURE) {
            return (!signature.is_empty())
                .then(|| Artefact::GeminiSignature(signature.to_owned()));
        }
        let id = value.strip_prefix(OPENAI_ITEM)?;
        (!id.is_empty()).then(|| Artefact::OpenAiItem(id.to_owned()))
    }

    /// What AG-UI 1.1's `encryptedValueType` calls this value.
    pub(crate) fn value_type(&self) -> &'static str {
        match self {
            Artefact::GeminiSignature(_) => "agui-lambda.gemini-thought-signature",
            Artefact::OpenAiItem(_) => "agui-lambda.openai-item-id",
        }
    }

    /// The `encryptedValueType` of any value this server made, reasoning included.
    pub(crate) fn type_of(value: &str) -> Option<&'static str> {
        Artefact::decode(value)
            .map(|artefact| artefact.value_type())
            .or_else(|| {
                super::reasoning::ReasoningArtefact::decode(value)
                    .map(|artefact| artefact.value_type())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artefacts_round_trip_and_others_decode_to_nothing() {
        for artefact in [
            Artefact::GeminiSignature("CiQBjz1rX0".into()),
            Artefact::OpenAiItem("fc_68a".into()),
        ] {
            assert_eq!(Artefact::decode(&artefact.encode()), Some(artefact));
        }
        for foreign in [
            "signature:abc",
            "gemini-signature:",
            "openai-item:",
            "fc_1",
            "",
        ] {
            assert_eq!(Artefact::decode(foreign), None, "{foreign}");
        }
        assert_eq!(
            Artefact::type_of("signature:abc"),
            Some("agui-lambda.thinking-signature")
        );
        assert_eq!(
            Artefact::type_of("openai-item:msg_1"),
            Some("agui-lambda.openai-item-id")
        );
        assert_eq!(Artefact::type_of("anything"), None);
    }
}
