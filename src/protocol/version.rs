//! AG-UI version negotiation: what a client declared on `RunAgentInput.protocolVersion`, the
//! version this server declares back on `RUN_STARTED`, and which shapes the client gets.

/// The AG-UI version this server speaks: what `RUN_STARTED` declares to every client but one
/// that declared 1.0.
pub(crate) const SPOKEN: &str = "1.1";
/// What a client that declared 1.0 is told: its stream is downgraded to 1.0's shapes.
pub(crate) const DOWNGRADED: &str = "1.0";

/// A client's `protocolVersion`, read as the spec's versioning rules read it: `MAJOR.MINOR`
/// compared numerically; anything else is uninterpretable and handled like a newer version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Declared {
    /// No declaration: a client from before the protocol carried a version (`@ag-ui/client`
    /// 0.0.x, CopilotKit), or one that declares a 0.x line.
    Nothing,
    OneZero,
    OneOne,
    /// A later minor of 1.x, or a later major: served as 1.1.
    Newer(String),
    /// Not `MAJOR.MINOR`: served as 1.1, like a newer version.
    Uninterpretable(String),
}

impl Declared {
    pub(crate) fn read(version: Option<&str>) -> Self {
        let Some(version) = version else {
            return Declared::Nothing;
        };
        let parsed = version
            .split_once('.')
            .filter(|(major, minor)| is_number(major) && is_number(minor))
            .and_then(|(major, minor)| {
                Some((major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?))
            });
        match parsed {
            None => Declared::Uninterpretable(version.to_owned()),
            Some((0, _)) => Declared::Nothing,
            Some((1, 0)) => Declared::OneZero,
            Some((1, 1)) => Declared::OneOne,
            Some(_) => Declared::Newer(version.to_owned()),
        }
    }

    /// Whether the client parses AG-UI 1.0's shapes: `RUN_FINISHED.outcome` (cancelled,
    /// interrupts, `pendingToolCallIds`), resume, sub-agent events.
    pub(crate) fn takes_1_0(&self) -> bool {
        !matches!(self, Declared::Nothing)
    }

    /// Whether the client takes what 1.1 added (`encryptedValueType`).
    pub(crate) fn takes_1_1(&self) -> bool {
        !matches!(self, Declared::Nothing | Declared::OneZero)
    }

    /// What a server log should say about the declaration, if anything.
    pub(crate) fn warning(&self) -> Option<String> {
        match self {
            Declared::Newer(version) => Some(format!(
                "the client declares AG-UI {version}, newer than this server's {SPOKEN}: served as {SPOKEN}"
            )),
            Declared::Uninterpretable(version) => Some(format!(
                "the client declares AG-UI version {version:?}, which is not MAJOR.MINOR: served as {SPOKEN}, as a newer version"
            )),
            _ => None,
        }
    }
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit())
}

/// What `RUN_STARTED.protocolVersion` says to a client, from what the run keeps of its
/// declaration: 1.0 to a 1.0 client (a downgrade by version), this server's own otherwise; a
/// client that declared nothing is told too (@ag-ui/client 0.0.59 passes the field through).
pub(crate) fn declaration(takes_1_0: bool, takes_1_1: bool) -> &'static str {
    if takes_1_0 && !takes_1_1 {
        DOWNGRADED
    } else {
        SPOKEN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_read_as_the_spec_compares_them() {
        let cases = [
            (None, Declared::Nothing, "1.1"),
            (Some("0.9"), Declared::Nothing, "1.1"),
            (Some("1.0"), Declared::OneZero, "1.0"),
            (Some("1.1"), Declared::OneOne, "1.1"),
            (Some("1.10"), Declared::Newer("1.10".into()), "1.1"),
            (Some("2.0"), Declared::Newer("2.0".into()), "1.1"),
            (
                Some("banana"),
                Declared::Uninterpretable("banana".into()),
                "1.1",
            ),
            (Some("1"), Declared::Uninterpretable("1".into()), "1.1"),
            (
                Some("1.0.0"),
                Declared::Uninterpretable("1.0.0".into()),
                "1.1",
            ),
            (Some("1.x"), Declared::Uninterpretable("1.x".into()), "1.1"),
            (
                Some("+1.0"),
                Declared::Uninterpretable("+1.0".into()),
                "1.1",
            ),
        ];
        for (sent, read, answered) in cases {
            let declared = Declared::read(sent);
            assert_eq!(declared, read, "{sent:?}");
            assert_eq!(
                declaration(declared.takes_1_0(), declared.takes_1_1()),
                answered,
                "{sent:?}"
            );
        }
    }

    #[test]
    fn newer_and_uninterpretable_declarations_are_served_as_ours_with_a_warning() {
        for sent in ["1.7", "banana"] {
            let declared = Declared::read(Some(sent));
            assert!(declared.takes_1_0() && declared.takes_1_1());
            assert!(declared.warning().unwrap().contains(sent));
        }
        assert_eq!(Declared::read(Some("1.1")).warning(), None);
        assert!(!Declared::read(None).takes_1_0());
        assert!(!Declared::read(Some("1.0")).takes_1_1());
    }
}
