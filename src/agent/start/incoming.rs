//! Which of a client's messages the thread already holds. Only the thread's latest stored
//! messages are read: everything the client sends up to the last message it shares with them
//! is held (the stored copy wins), what it sends after that is new.

use crate::protocol::{Message, MessageId};
use std::collections::HashMap;

/// A client's messages, split against the thread's latest stored messages.
#[derive(Debug, PartialEq)]
pub(super) struct Incoming {
    /// The messages the thread does not hold yet, in the order sent.
    pub(super) new: Vec<Message>,
    /// Where each of `new` is in the input (for the fields of refusals).
    pub(super) positions: Vec<usize>,
    /// The store holds messages after the last one the client sent: the client needs a
    /// `MESSAGES_SNAPSHOT`.
    pub(super) behind: bool,
    /// Held messages the client resent with other content; the stored copies are kept.
    pub(super) changed: Vec<MessageId>,
}

/// Splits `sent` against `stored`, the thread's latest messages (its last one included).
///
/// The anchor is the last sent message whose id `stored` has: it and everything sent before it
/// are held, whether or not `stored` reaches back to them, so a client may resend the whole
/// thread or only what is new after the last message it holds. A client is behind when the
/// store has messages after the anchor (reasoning aside: many UIs drop it): it holds a stale
/// part of the thread. A client that names no stored message is incremental (AG-Kit's
/// send-message, curl, a script, a fresh tab): it sends only what is new and reads the history,
/// if it wants it, from `GET /threads/{id}`, so it is never sent the whole thread.
pub(super) fn split(stored: &[Message], sent: &[Message]) -> Incoming {
    let stored_at: HashMap<&MessageId, usize> = stored
        .iter()
        .enumerate()
        .map(|(at, message)| (message.id(), at))
        .collect();
    let anchor = sent
        .iter()
        .enumerate()
        .rev()
        .find_map(|(index, message)| Some((index, *stored_at.get(message.id())?)));
    let (first_new, after_in_store) = match anchor {
        Some((index, at)) => (index + 1, stored.get(at + 1..).unwrap_or_default()),
        None => (0, &[][..]),
    };
    let changed = sent[..first_new]
        .iter()
        .filter(|message| {
            stored_at
                .get(message.id())
                .is_some_and(|&at| stored[at] != **message)
        })
        .map(|message| message.id().clone())
        .collect();
    Incoming {
        new: sent[first_new..].to_vec(),
        positions: (first_new..sent.len()).collect(),
        behind: after_in_store
            .iter()
            .any(|message| !matches!(message, Message::Reasoning { .. })),
        changed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::UserContent;

    fn user(id: &str, text: &str) -> Message {
        Message::User {
            id: MessageId::parse(id.to_owned(), 128).unwrap(),
            content: UserContent::Text(text.into()),
            name: None,
        }
    }
    fn said(id: &str) -> Message {
        user(id, id)
    }
    fn thought(id: &str) -> Message {
        Message::Reasoning {
            id: MessageId::parse(id.to_owned(), 128).unwrap(),
            content: "hm".into(),
            encrypted_value: None,
        }
    }
    fn ids(messages: &[Message]) -> Vec<&str> {
        messages.iter().map(|m| m.id().as_str()).collect()
    }

    #[test]
    fn a_full_history_client_that_is_up_to_date_sends_only_held_messages_and_its_new_one() {
        let stored = [said("u1"), said("a1"), said("u2"), said("a2")];
        let sent = [said("u1"), said("a1"), said("u2"), said("a2"), said("u3")];
        let incoming = split(&stored, &sent);
        assert_eq!(ids(&incoming.new), ["u3"]);
        assert_eq!(incoming.positions, [4]);
        assert!(!incoming.behind);
        assert!(incoming.changed.is_empty());
    }

    #[test]
    fn a_client_that_sends_only_what_follows_its_last_held_message_is_up_to_date() {
        let stored = [said("u1"), said("a1"), said("u2"), said("a2")];
        let incoming = split(&stored, &[said("a2"), said("u3")]);
        assert_eq!(ids(&incoming.new), ["u3"]);
        assert_eq!(incoming.positions, [1]);
        assert!(!incoming.behind);
    }

    #[test]
    fn the_stored_tail_need_not_reach_back_to_what_the_client_resends() {
        // The thread's older messages were not loaded: u1 and a1 are held all the same.
        let tail = [said("u2"), said("a2")];
        let sent = [said("u1"), said("a1"), said("u2"), said("a2"), said("u3")];
        let incoming = split(&tail, &sent);
        assert_eq!(ids(&incoming.new), ["u3"]);
        assert!(!incoming.behind);
    }

    #[test]
    fn a_client_without_the_latest_stored_messages_is_behind() {
        let stored = [said("u1"), said("a1"), said("u2"), said("a2")];
        let incoming = split(&stored, &[said("a1"), said("u3")]);
        assert_eq!(ids(&incoming.new), ["u3"]);
        assert!(incoming.behind, "u2 and a2 came from elsewhere");
        let new_thread = split(&[], &[said("u1")]);
        assert!(!new_thread.behind);
        assert_eq!(ids(&new_thread.new), ["u1"]);
    }

    #[test]
    fn a_client_that_names_no_stored_message_is_incremental_not_behind() {
        let stored = [said("u1"), said("a1"), said("u2"), said("a2")];
        let incremental = split(&stored, &[said("u3")]);
        assert_eq!(ids(&incremental.new), ["u3"]);
        assert_eq!(incremental.positions, [0]);
        assert!(!incremental.behind);
        let two_new = split(&stored, &[said("u3"), said("u4")]);
        assert_eq!(ids(&two_new.new), ["u3", "u4"]);
        assert!(!two_new.behind);
    }

    #[test]
    fn reasoning_the_client_dropped_does_not_make_it_behind() {
        let stored = [said("u1"), thought("r1"), said("a1"), thought("r2")];
        assert!(!split(&stored, &[said("a1"), said("u2")]).behind);
    }

    #[test]
    fn a_resent_message_with_other_content_is_held_and_reported_not_taken() {
        let stored = [said("u1"), said("a1")];
        let sent = [user("u1", "rewritten"), said("a1"), said("u2")];
        let incoming = split(&stored, &sent);
        assert_eq!(ids(&incoming.new), ["u2"]);
        assert_eq!(
            incoming
                .changed
                .iter()
                .map(MessageId::as_str)
                .collect::<Vec<_>>(),
            ["u1"]
        );
    }

    #[test]
    fn messages_sent_before_the_anchor_are_held_even_when_the_store_has_no_such_id() {
        // A client may drop, reorder or invent what comes before the last message it shares
        // with the store: none of it is stored, none of it counts.
        let stored = [said("u1"), said("a1")];
        let incoming = split(&stored, &[said("x"), said("a1"), said("u2")]);
        assert_eq!(ids(&incoming.new), ["u2"]);
        assert!(!incoming.behind);
    }
}
