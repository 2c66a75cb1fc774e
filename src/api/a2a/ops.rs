//! The A2A operations, whatever binding carries them: send (blocking, `returnImmediately`, or
//! streamed), get, list, cancel and subscribe. A task is a chain of runs on one of the caller's
//! threads (`contextId`); each run's end is folded into the task by a hook the run awaits, and a
//! task whose run vanished (its process stopped) is settled from the run's stored log.

use super::super::app::App;
use super::keeper::{
    body_of, fold_on_end, internal, next_version, page_token, parse_page_token, run_frames,
};
use crate::a2a::errors::{A2aError, ErrorKind};
use crate::a2a::inbound::{self, Turn};
use crate::a2a::task::{self, TaskBody};
use crate::a2a::types::{
    ListTasksRequest, ListTasksResponse, SendMessageRequest, StreamResponse, Task, TaskIdRequest,
    TaskState,
};
use crate::agent::{Agent, RunSource, StartError};
use crate::auth::Principal;
use crate::protocol::{RunId, ThreadId};
use crate::store::{A2aTaskQuery, A2aTaskRecord, MAX_TASK_ID_LEN, StoreError};
use futures_util::{Stream, StreamExt};
use std::time::Duration;
use tokio::time::Instant;

/// How long a cancel waits for the run to stop before answering with the task as it is.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// What a send answers.
pub(super) enum Sent {
    Task(Box<Task>),
    Stream(std::pin::Pin<Box<dyn Stream<Item = StreamResponse> + Send>>),
}

fn view(record: &A2aTaskRecord, body: &TaskBody, history: Option<i32>, artifacts: bool) -> Task {
    task::view(
        &record.task_id,
        record.thread_id.as_str(),
        body,
        history,
        artifacts,
    )
}

/// Why a run could not start, in A2A's terms.
fn start_error(error: StartError) -> A2aError {
    match error {
        StartError::Input(input) => A2aError::invalid_params(input.to_string()),
        StartError::UnsupportedPart { .. } => {
            A2aError::new(ErrorKind::ContentTypeNotSupported, error.to_string())
        }
        StartError::NotFound => {
            A2aError::invalid_params("contextId names no conversation of yours")
        }
        StartError::Busy => A2aError::new(
            ErrorKind::UnsupportedOperation,
            "another task of this context is working; wait for it or cancel it",
        ),
        StartError::Interrupt(interrupt) => A2aError::invalid_params(interrupt.to_string()),
        StartError::QuotaExceeded(_) | StartError::TooLarge(_) | StartError::Merge(_) => {
            A2aError::new(ErrorKind::InvalidRequest, error.to_string())
        }
        other => {
            tracing::error!(error = %other, "A2A: a run could not start");
            A2aError::new(ErrorKind::Internal, "the run could not start")
        }
    }
}

impl App {
    /// The agent a request's `tenant` names: the default one, or a profile.
    pub(in crate::api) fn a2a_agent(&self, tenant: &str) -> Result<Agent, A2aError> {
        if tenant.is_empty() {
            return Ok(self.agent.clone());
        }
        self.agent
            .profile(tenant)
            .map_err(|error| A2aError::invalid_params(format!("tenant: {error}")))
    }

    /// `owner`'s task `id`, settled: `TaskNotFound` when there is none.
    async fn a2a_record(
        &self,
        owner: &Principal,
        id: &str,
    ) -> Result<(A2aTaskRecord, TaskBody), A2aError> {
        let valid = !id.is_empty()
            && id.len() <= MAX_TASK_ID_LEN
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
        if !valid {
            return Err(A2aError::task_not_found(id));
        }
        let record = self
            .agent
            .a2a_task(owner, id)
            .await
            .map_err(internal)?
            .ok_or_else(|| A2aError::task_not_found(id))?;
        self.settle(record).await
    }

    /// `SendMessage` / `SendStreamingMessage`.
    pub(super) async fn a2a_send(
        &self,
        owner: &Principal,
        request: SendMessageRequest,
        streaming: bool,
        invocation_deadline: Option<Instant>,
    ) -> Result<Sent, A2aError> {
        inbound::check_message(&request.message)?;
        let agent = self.a2a_agent(&request.tenant)?;
        let deadline = self.run_deadline();
        let run_id = RunId::generate();
        let (record, body, mut prepared) = if request.message.task_id.is_empty() {
            self.new_task(&agent, owner, &request, &run_id, deadline)
                .await?
        } else {
            self.resume_task(&agent, owner, &request, &run_id, deadline)
                .await?
        };
        let hook_agent = self.agent.clone();
        let (task_id, hook_owner) = (record.task_id.clone(), owner.clone());
        prepared.on_end(Box::new(move |live| {
            Box::pin(fold_on_end(hook_agent, hook_owner, task_id, live))
        }));
        prepared.observe(crate::agent::Observed {
            received: std::time::Instant::now(),
            dialect: "a2a",
        });
        // Under Lambda the run goes on in the next invocation; its task is settled from the
        // run's log by whoever reads it then (the end hook skips a run that was handed off).
        if let Some(ends) = self.invocation_end(invocation_deadline) {
            prepared.end_invocation_at(ends);
        }
        let live = prepared.spawn();
        let config = request.configuration.unwrap_or_default();
        if streaming {
            let first = StreamResponse::Task(view(&record, &body, config.history_length, true));
            let frames = run_frames(&record, live.follow(0));
            return Ok(Sent::Stream(Box::pin(
                futures_util::stream::iter([first]).chain(frames),
            )));
        }
        if !config.return_immediately {
            // Blocking: until the run's end is folded in, or the invocation must answer.
            let answer_by = self.answer_deadline(invocation_deadline);
            let _ = tokio::time::timeout_at(answer_by, live.done()).await;
        }
        let (record, body) = self.a2a_record(owner, &record.task_id).await?;
        Ok(Sent::Task(Box::new(view(
            &record,
            &body,
            config.history_length,
            true,
        ))))
    }

    /// When `owner`'s thread was created (its tasks are kept with that incarnation).
    async fn created_at(&self, owner: &Principal, thread: &ThreadId) -> Result<i64, A2aError> {
        use crate::store::ThreadActivity;
        match self.agent.activity(owner, thread).await {
            Ok(
                ThreadActivity::Running { created_at_ms, .. }
                | ThreadActivity::Stalled { created_at_ms, .. }
                | ThreadActivity::Idle { created_at_ms },
            ) => Ok(created_at_ms),
            Ok(ThreadActivity::Missing) => Err(A2aError::invalid_params(
                "contextId names no conversation of yours",
            )),
            Err(error) => Err(internal(error)),
        }
    }

    /// A new task on the message's context (a new thread without one).
    async fn new_task(
        &self,
        agent: &Agent,
        owner: &Principal,
        request: &SendMessageRequest,
        run_id: &RunId,
        deadline: Instant,
    ) -> Result<(A2aTaskRecord, TaskBody, crate::agent::PreparedRun), A2aError> {
        let message = &request.message;
        let thread = if message.context_id.is_empty() {
            ThreadId::new_uuid()
        } else {
            ThreadId::parse(message.context_id.clone(), crate::protocol::ids::MAX_ID_LEN)
                .map_err(|error| A2aError::invalid_params(format!("message.contextId {error}")))?
        };
        // Interrupts an earlier task of the context left open are cancelled by this message.
        let waiting = self.waiting_tasks(owner, &thread).await?;
        let stale: Vec<String> = waiting
            .iter()
            .flat_map(|(_, body)| body.open_interrupts.clone())
            .collect();
        let input = inbound::run_input(
            message,
            &thread,
            run_id,
            Turn::Message {
                stale_interrupts: &stale,
            },
            &self.limits,
        )?;
        let prepared = agent
            .start(owner.clone(), input, deadline)
            .await
            .map_err(start_error)?;
        self.close_waiting(waiting).await;
        let thread_created_at_ms = self.created_at(owner, &thread).await?;
        let task_id = format!("task_{}", uuid::Uuid::new_v4().simple());
        let mut sent = message.clone();
        sent.task_id.clone_from(&task_id);
        sent.context_id = thread.to_string();
        let body = TaskBody {
            status: task::status(TaskState::Working, None),
            history: vec![sent],
            runs: vec![run_id.to_string()],
            profile: (!request.tenant.is_empty()).then(|| request.tenant.clone()),
            ..TaskBody::default()
        };
        let now = chrono::Utc::now().timestamp_millis();
        let mut record = A2aTaskRecord {
            owner: owner.clone(),
            task_id,
            thread_id: thread,
            thread_created_at_ms,
            state: TaskState::Working.as_str().to_owned(),
            created_at_ms: now,
            updated_at_ms: now,
            version: 1,
            body: serde_json::Value::Null,
        };
        let mut body = body;
        body.fit();
        record.body = serde_json::to_value(&body).unwrap_or_default();
        self.agent
            .create_a2a_task(&record)
            .await
            .map_err(internal)?;
        Ok((record, body, prepared))
    }

    /// The earlier tasks of `thread` that wait on interrupts.
    async fn waiting_tasks(
        &self,
        owner: &Principal,
        thread: &ThreadId,
    ) -> Result<Vec<(A2aTaskRecord, TaskBody)>, A2aError> {
        let earlier = self
            .agent
            .list_a2a_tasks(
                owner,
                &A2aTaskQuery {
                    thread_id: Some(thread.clone()),
                    page_size: 100,
                    ..A2aTaskQuery::default()
                },
            )
            .await
            .map_err(internal)?;
        Ok(earlier
            .tasks
            .into_iter()
            .filter_map(|record| {
                let body = body_of(&record).ok()?;
                (!body.open_interrupts.is_empty()).then_some((record, body))
            })
            .collect())
    }

    /// Closes `waiting` tasks once a new message has left their interrupts behind: an
    /// interrupted one ends canceled. A save that fails is logged; the new task goes on.
    async fn close_waiting(&self, waiting: Vec<(A2aTaskRecord, TaskBody)>) {
        for (record, mut body) in waiting {
            body.open_interrupts.clear();
            if body.status.state.is_interrupted() {
                body.status = task::status(TaskState::Canceled, None);
            }
            if let Err(error) = self
                .agent
                .save_a2a_task(&next_version(&record, &body))
                .await
            {
                tracing::warn!(%error, task = %record.task_id, "A2A: an earlier task was not closed");
            }
        }
    }

    /// A message to a task: the answer to the interrupts it waits on.
    async fn resume_task(
        &self,
        agent: &Agent,
        owner: &Principal,
        request: &SendMessageRequest,
        run_id: &RunId,
        deadline: Instant,
    ) -> Result<(A2aTaskRecord, TaskBody, crate::agent::PreparedRun), A2aError> {
        let message = &request.message;
        let (record, mut body) = self.a2a_record(owner, &message.task_id).await?;
        if !message.context_id.is_empty() && message.context_id != record.thread_id.as_str() {
            return Err(A2aError::invalid_params(
                "message.contextId does not match the task's contextId",
            ));
        }
        let state = body.status.state;
        if state.is_terminal() {
            return Err(A2aError::new(
                ErrorKind::UnsupportedOperation,
                format!(
                    "the task is {}: it takes no more messages; send one without taskId (same contextId) for a new task",
                    state.as_str()
                ),
            ));
        }
        if !state.is_interrupted() {
            return Err(A2aError::new(
                ErrorKind::UnsupportedOperation,
                "the task is working: wait for it (SubscribeToTask) or cancel it",
            ));
        }
        let input = inbound::run_input(
            message,
            &record.thread_id,
            run_id,
            Turn::Resume {
                open_interrupts: &body.open_interrupts,
            },
            &self.limits,
        )?;
        let prepared = agent
            .start(owner.clone(), input, deadline)
            .await
            .map_err(start_error)?;
        let mut sent = message.clone();
        sent.context_id = record.thread_id.to_string();
        body.history.push(sent);
        body.runs.push(run_id.to_string());
        body.open_interrupts.clear();
        body.status = task::status(TaskState::Working, None);
        body.fit();
        let next = next_version(&record, &body);
        self.agent
            .save_a2a_task(&next)
            .await
            .map_err(|error| match error {
                StoreError::Conflict => A2aError::new(
                    ErrorKind::UnsupportedOperation,
                    "the task changed meanwhile (answered or cancelled by another request)",
                ),
                StoreError::NotFound => A2aError::task_not_found(&record.task_id),
                other => internal(other),
            })?;
        Ok((next, body, prepared))
    }

    /// `GetTask`.
    pub(super) async fn a2a_get(
        &self,
        owner: &Principal,
        request: &TaskIdRequest,
    ) -> Result<Task, A2aError> {
        let (record, body) = self.a2a_record(owner, &request.id).await?;
        Ok(view(&record, &body, request.history_length, true))
    }

    /// `ListTasks`: the caller's tasks, most recently updated first.
    pub(super) async fn a2a_list(
        &self,
        owner: &Principal,
        request: &ListTasksRequest,
    ) -> Result<ListTasksResponse, A2aError> {
        let page_size = match request.page_size {
            None => 50,
            Some(size @ 1..=100) => usize::try_from(size).unwrap_or(50),
            Some(_) => return Err(A2aError::invalid_params("pageSize must be 1 to 100")),
        };
        let after = if request.page_token.is_empty() {
            None
        } else {
            Some(parse_page_token(&request.page_token)?)
        };
        let thread_id = if request.context_id.is_empty() {
            None
        } else {
            Some(
                ThreadId::parse(request.context_id.clone(), crate::protocol::ids::MAX_ID_LEN)
                    .map_err(|error| A2aError::invalid_params(format!("contextId {error}")))?,
            )
        };
        let updated_since_ms = match &request.status_timestamp_after {
            None => None,
            Some(text) => Some(
                chrono::DateTime::parse_from_rfc3339(text)
                    .map_err(|_| {
                        A2aError::invalid_params("statusTimestampAfter must be an ISO 8601 time")
                    })?
                    .timestamp_millis(),
            ),
        };
        let query = A2aTaskQuery {
            thread_id,
            state: request
                .status
                .filter(|state| *state != TaskState::Unspecified)
                .map(|state| state.as_str().to_owned()),
            updated_since_ms,
            page_size,
            after,
        };
        let page = self
            .agent
            .list_a2a_tasks(owner, &query)
            .await
            .map_err(internal)?;
        let mut tasks = Vec::with_capacity(page.tasks.len());
        for record in page.tasks {
            let (record, body) = self.settle(record).await?;
            tasks.push(view(
                &record,
                &body,
                request.history_length,
                request.include_artifacts.unwrap_or(false),
            ));
        }
        Ok(ListTasksResponse {
            tasks,
            next_page_token: page.next.map(|next| page_token(&next)).unwrap_or_default(),
            page_size: i32::try_from(page_size).unwrap_or(50),
            total_size: i32::try_from(page.total).unwrap_or(i32::MAX),
        })
    }

    /// `CancelTask`: a working task's run is stopped (wherever it runs); a task waiting for
    /// input is canceled at once.
    pub(super) async fn a2a_cancel(
        &self,
        owner: &Principal,
        request: &TaskIdRequest,
    ) -> Result<Task, A2aError> {
        let (record, mut body) = self.a2a_record(owner, &request.id).await?;
        let state = body.status.state;
        if state.is_terminal() {
            return Err(A2aError::new(
                ErrorKind::TaskNotCancelable,
                format!("the task is {} already", state.as_str()),
            ));
        }
        if state.is_interrupted() {
            body.status = task::status(TaskState::Canceled, None);
            let next = next_version(&record, &body);
            return match self.agent.save_a2a_task(&next).await {
                Ok(()) => Ok(view(&next, &body, request.history_length, true)),
                Err(StoreError::Conflict) => Err(A2aError::new(
                    ErrorKind::TaskNotCancelable,
                    "the task changed meanwhile; get it and try again",
                )),
                Err(StoreError::NotFound) => Err(A2aError::task_not_found(&request.id)),
                Err(other) => Err(internal(other)),
            };
        }
        let Some(run) = body
            .current_run()
            .and_then(|run| RunId::parse(run, crate::protocol::ids::MAX_ID_LEN).ok())
        else {
            return Err(A2aError::new(ErrorKind::Internal, "the task names no run"));
        };
        match self.agent.cancel(owner, &record.thread_id, &run).await {
            Ok(_) | Err(StoreError::NotFound) => {}
            Err(other) => return Err(internal(other)),
        }
        // Until the run's end is folded in (here, or by the process that runs it).
        let until = Instant::now() + CANCEL_WAIT;
        loop {
            let (record, body) = self.a2a_record(owner, &request.id).await?;
            if body.status.state != TaskState::Working || Instant::now() >= until {
                return Ok(view(&record, &body, request.history_length, true));
            }
            match self.agent.live_runs().get(&record.thread_id, &run) {
                Some(live) => {
                    let _ = tokio::time::timeout_at(until, live.done()).await;
                }
                None => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// `SubscribeToTask`: the task as it is, then its current run's events from the start, until
    /// the task ends or waits for input. A task that has ended is refused.
    pub(super) async fn a2a_subscribe(
        &self,
        owner: &Principal,
        request: &TaskIdRequest,
        invocation_deadline: Option<Instant>,
    ) -> Result<std::pin::Pin<Box<dyn Stream<Item = StreamResponse> + Send>>, A2aError> {
        let (record, body) = self.a2a_record(owner, &request.id).await?;
        let state = body.status.state;
        if state.is_terminal() {
            return Err(A2aError::new(
                ErrorKind::UnsupportedOperation,
                format!(
                    "the task is {}: there is nothing to subscribe to",
                    state.as_str()
                ),
            ));
        }
        let first = StreamResponse::Task(view(&record, &body, request.history_length, true));
        let run = body
            .current_run()
            .filter(|_| state == TaskState::Working)
            .and_then(|run| RunId::parse(run, crate::protocol::ids::MAX_ID_LEN).ok());
        let Some(run) = run else {
            // Waiting for input: the task is all there is until the client answers.
            return Ok(Box::pin(futures_util::stream::iter([first])));
        };
        let ends = self.stream_end(self.invocation_end(invocation_deadline));
        let batches = match self
            .agent
            .run_source(owner, &record.thread_id, &run)
            .await
            .map_err(internal)?
        {
            Some(RunSource::Live(live)) => live.follow(0).boxed(),
            Some(RunSource::Stored { run, .. }) => {
                let first_page = self.agent.run_events(&run, None).await.map_err(internal)?;
                super::super::stream::follow_stored(
                    self.agent.clone(),
                    owner.clone(),
                    run,
                    first_page,
                    0,
                    ends,
                )
                .boxed()
            }
            None => return Err(A2aError::task_not_found(&request.id)),
        };
        let frames = run_frames(&record, batches);
        Ok(Box::pin(futures_util::stream::iter([first]).chain(frames)))
    }
}
