//! The AG-UI protocol: ids, messages, the `RunAgentInput` parser, events and their SSE framing.
//! Pure data and encoding; depends on no other module of the crate.

pub mod events;
pub mod ids;
pub mod input;
pub mod interrupt;
pub mod message;
pub mod sse;
#[cfg(any(test, feature = "test-utils"))]
pub mod verify;

pub use events::{Event, RunErrorCode};
pub use ids::{MessageId, RunId, ThreadId, ToolCallId};
pub use input::{ClientTool, ContextEntry, InputError, Limits, RunInput, parse_run_input};
pub use message::{Attachment, Message, PartSource, Role, ToolCall, UserContent, UserPart};
