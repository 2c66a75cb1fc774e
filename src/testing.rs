//! What this crate's own tests, benches and fuzz targets reach besides the public API, by the
//! module it lives in. Behind the `test-utils` feature and hidden from the docs: not API, and
//! free to change in any release.

pub mod a2a {
    pub use crate::a2a::client::{
        A2aClient, ChildEvent, ChildStream, ClientError, Credentials, Delegation,
    };
    pub use crate::a2a::errors::ErrorKind;
    pub use crate::a2a::types::TaskState;
}

pub mod agent {
    pub use crate::agent::context::summary::{CONDENSE_MARKER, SUMMARY_MARKER};
    pub use crate::agent::history_day::history_day;
    pub use crate::agent::memory::MemorySettings;
    pub use crate::agent::tools::ToolRegistry;
    pub use crate::agent::{Agent, AgentSettings, ContextSettings, ContextStrategy, Quotas};
}

pub mod api {
    pub use crate::api::App;
    pub use crate::api::lambda::{answer_event, handle};
    pub use crate::api::local::bind;
    pub use crate::api::stream::frames;
}

pub mod auth {
    pub use crate::auth::{Principal, hash_api_key};
}

pub mod config {
    pub use crate::config::{Config, ModelChoice, PromptCache};
}

pub mod dialects {
    pub use crate::dialects::agentscope::AgentScopeEncoder;
    pub use crate::dialects::{AguiEncoder, Encoder};
}

pub mod genui {
    pub mod a2ui {
        pub use crate::genui::a2ui::catalog::Catalog;
        pub use crate::genui::a2ui::client::Mode;
        pub use crate::genui::a2ui::client::{Offer, model_context, offer};
        pub use crate::genui::a2ui::describe::{description, estimated_tokens};
        pub use crate::genui::a2ui::validate::{Checked, Code, ValidationError, check};
    }
}

pub mod model {
    pub use crate::model::demo::DemoModel;
    pub use crate::model::refusal::Refusal;
    pub use crate::model::{
        AssembledCall, Attempt, DeltaStream, FinishReason, ModelDelta, ModelError, ModelIdentity,
        ModelProvider, ModelRequest, RetryHint, Served, ToolCallAccumulator, Usage,
    };

    pub mod transcription {
        pub use crate::model::transcription::{
            Audio, Transcriber, TranscriptionError, TranscriptionSettings,
        };
    }

    #[cfg(feature = "bedrock")]
    pub mod bedrock {
        pub use crate::model::bedrock::{
            BedrockProvider, BedrockSettings, CachePoints, ClientSettings, client_config,
        };
    }

    pub mod openai {
        pub use crate::model::openai::{ChunkParser, delta_stream};

        /// The Responses API's receive path, for the parser bench.
        pub fn responses_delta_stream<S, E>(bytes: S, model: &str) -> super::DeltaStream
        where
            S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Send + 'static,
            E: std::fmt::Display + Send + 'static,
        {
            crate::model::openai::responses::delta_stream(bytes, model)
        }
    }

    pub mod anthropic {
        /// The Messages API's receive path, for the parser bench.
        pub fn delta_stream<S, E>(bytes: S) -> super::DeltaStream
        where
            S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Send + 'static,
            E: std::fmt::Display + Send + 'static,
        {
            crate::model::anthropic::delta_stream(bytes)
        }
    }

    pub mod scripted {
        pub use crate::model::scripted::{ScriptedModel, ScriptedTurn};
    }
}

pub mod protocol {
    pub use crate::protocol::{
        Attachment, ClientTool, Event, Limits, Message, MessageId, PartSource, RunId, ThreadId,
        ToolCall, ToolCallId, UserContent, UserPart, parse_run_input,
    };

    pub mod events {
        pub use crate::protocol::events::{Event, RunUsage, TextRole, TokenUsage};
    }

    pub mod input {
        pub use crate::protocol::input::content::SkippedPart;
        pub use crate::protocol::input::{ContextEntry, ForwardedProps, RunInput};
    }

    pub mod sse {
        pub use crate::protocol::sse::{encode_event, now_ms};
    }

    pub mod verify {
        pub use crate::protocol::verify::{parse_sse, parse_sse_with_ids, verify_run};
    }
}

pub mod startup {
    pub use crate::startup::{
        AppBuilder, Models, StartupError, authenticator, model_from_config, models_from_config,
        store_from_config, with_retry_policy,
    };
}

pub mod store {
    pub use crate::store::{
        AfterQuery, Archived, Blobs, CancelState, Checkpoint, Claim, ClaimedRun, ContextMark,
        ContextUpdate, Deletion, EventLog, History, HistoryQuery, Lease, LinkedRun, Memories,
        Memory, MemoryEdit, MemoryId, MemorySet, MemoryStore, MessagesAfter, NewMemory, NewThread,
        ParentStep, QuotaExceeded, QuotaLimits, RunCheckpoint, RunCheckpoints, RunClaim, RunFinish,
        RunLeases, RunStart, RunTokens, Runner, Settlement, ShelfPage, ShelfQuery, ShelvedThread,
        StoreError, StoredBlob, TaskFailure, TaskRecord, TaskRecords, TaskState, ThreadActivity,
        ThreadLink, ThreadShelf, ThreadStore, Threads, TimedMessage, TimedPage, TimedQuery, Upload,
        UsageLedger, usage_day,
    };
    #[cfg(feature = "aws")]
    pub use crate::store::{DynamoStore, StoreUsage};

    #[cfg(feature = "aws")]
    pub mod blobs {
        pub use crate::store::blobs::{BlobError, BlobSettings, Blobs, Upload};
    }

    #[cfg(feature = "aws")]
    pub mod dynamo {
        pub use crate::store::dynamo::TableSetup;
    }
}

pub mod telemetry {
    pub use crate::telemetry::emf::Emf;
    pub use crate::telemetry::{Settings, flush, init};

    pub mod emf {
        pub use crate::telemetry::emf::Emf;
    }
}
