//! The AG-UI protocol: ids, messages, the `RunAgentInput` parser, events and their SSE framing.
//! Pure data and encoding; depends on no other module of the crate.

pub(crate) mod events;
pub(crate) mod ids;
pub(crate) mod input;
pub(crate) mod interrupt;
pub(crate) mod message;
pub(crate) mod open_items;
pub(crate) mod sse;
#[cfg(any(test, feature = "test-utils"))]
pub(crate) mod verify;
pub(crate) mod version;

pub use events::Event;
pub(crate) use events::RunErrorCode;
pub use ids::{MessageId, RunId, ThreadId, ToolCallId};
#[cfg(any(test, feature = "test-utils"))]
pub use input::parse_run_input;
pub use input::{ClientTool, Limits};
pub(crate) use input::{ContextEntry, InputError, RunInput, SkippedPart};
pub use message::{Attachment, Message, PartSource, ToolCall, UserContent, UserPart};
