//! The model's view of a long thread: how large the model's window is, how large the thread has
//! grown, and the compaction that keeps it under the window (a part too large cut, old tool
//! results cleared, the oldest turns summarised or dropped). It changes what the model is sent,
//! never what the thread holds.

mod compact;
mod estimate;
mod plan;
mod summary;
mod view;
mod window;
