//! A Lambda emulator that behaves like the service where runs that outlast an invocation care:
//! the function is the built binary under the real Runtime API (on loopback, one listener per
//! execution environment), with streamed responses; a Function URL in front (payload 2.0
//! events in, the streamed prelude and body out); an Invoke API whose asynchronous invocations
//! are delivered at least once (twice, or late, as the policy says) and retried when they fail;
//! an invocation timeout after which the environment's process is killed; environments frozen
//! (`SIGSTOP`) between invocations and started as needed, up to a limit.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Instant;

/// How the emulated service delivers asynchronous invocations.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    /// Before the first delivery.
    pub delay: Duration,
    /// Every asynchronous invocation is delivered a second time, this long after the first.
    pub duplicate_after: Option<Duration>,
    /// A failed (or timed out) asynchronous invocation is delivered again this many times
    /// (Lambda's `MaximumRetryAttempts`), `retry_delay` after it failed.
    pub retries: u32,
    pub retry_delay: Duration,
}

impl Default for Delivery {
    fn default() -> Self {
        Self {
            delay: Duration::ZERO,
            duplicate_after: None,
            retries: 2,
            retry_delay: Duration::from_millis(500),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The function's timeout: its deadline for each invocation, when its process is killed.
    pub timeout: Duration,
    pub delivery: Delivery,
    /// The function's environment variables, besides those the emulator sets.
    pub env: Vec<(String, String)>,
    pub max_environments: usize,
}

/// What became of one invocation, for the tests' assertions.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// Delivered through the Invoke API (not a Function URL request).
    pub asynchronous: bool,
    /// The event's first key (`aguiContinuedRun` …), or the HTTP path for a Function URL one.
    pub kind: String,
    pub payload: Value,
    pub environment: u64,
    /// The response body (asynchronous invocations), when it came.
    pub answer: Option<String>,
    pub timed_out: bool,
    pub started: Instant,
}

enum Responder {
    /// A Function URL request waiting for the streamed response.
    Sync(oneshot::Sender<Streamed>),
    /// An asynchronous invocation: its delivery attempt.
    Async { attempt: u32 },
}

struct Invocation {
    payload: Value,
    responder: Responder,
}

/// A streamed response as the function sends it: the prelude, then the body's chunks.
struct Streamed {
    prelude: Value,
    body: mpsc::Receiver<Result<Bytes, std::io::Error>>,
}

struct Busy {
    request_id: String,
    invocation: u64,
    payload: Value,
    asynchronous: bool,
    attempt: u32,
    /// Where the streamed response goes (a Function URL request).
    sink: Option<oneshot::Sender<Streamed>>,
    /// The body's chunks once the prelude went (so a kill can cut it).
    chunks: Option<mpsc::Sender<Result<Bytes, std::io::Error>>>,
}

struct Environment {
    id: u64,
    pid: Option<u32>,
    child: Option<tokio::process::Child>,
    busy: Option<Busy>,
    frozen: bool,
    dead: bool,
}

struct Shared {
    settings: Settings,
    binary: String,
    front_url: String,
    queue: Mutex<VecDeque<Invocation>>,
    work: Notify,
    environments: Mutex<Vec<Environment>>,
    /// Environments waiting in `/next`.
    idle: Mutex<usize>,
    records: Mutex<Vec<Record>>,
    next_id: AtomicU64,
    pub log: Arc<Mutex<Vec<String>>>,
    /// When the emulator started: log lines say how long after.
    epoch: Instant,
}

/// A running emulator; its environments are killed when it is dropped.
pub(crate) struct Emulator {
    /// The Function URL's base, and the Invoke API's (`AWS_ENDPOINT_URL_LAMBDA`).
    pub url: String,
    shared: Arc<Shared>,
    _front: tokio::task::JoinHandle<()>,
}

impl Drop for Emulator {
    fn drop(&mut self) {
        for environment in lock(&self.shared.environments).iter_mut() {
            if let Some(child) = environment.child.as_mut() {
                let _ = child.start_kill();
            }
            if let Some(pid) = environment.pid {
                signal(pid, "CONT");
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn signal(pid: u32, name: &str) {
    let _ = std::process::Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .status();
}

impl Emulator {
    /// The built binary as the function, with `settings`.
    pub(crate) async fn start(settings: Settings) -> Self {
        let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", front.local_addr().unwrap());
        let shared = Arc::new(Shared {
            settings,
            binary: env!("CARGO_BIN_EXE_agui-lambda").to_owned(),
            front_url: url.clone(),
            queue: Mutex::new(VecDeque::new()),
            work: Notify::new(),
            environments: Mutex::new(Vec::new()),
            idle: Mutex::new(0),
            records: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            log: Arc::new(Mutex::new(Vec::new())),
            epoch: Instant::now(),
        });
        let serving = shared.clone();
        let front = crate::loopback::serve(front, move |request| {
            let shared = serving.clone();
            async move { front_door(shared, request).await }
        });
        Self {
            url,
            shared,
            _front: front,
        }
    }

    /// Every invocation so far.
    pub(crate) fn records(&self) -> Vec<Record> {
        lock(&self.shared.records).clone()
    }

    /// The function's log lines, every environment's.
    pub(crate) fn log(&self) -> Vec<String> {
        lock(&self.shared.log).clone()
    }

    /// Kills the environment running an invocation of `kind` (the process, as a crash would),
    /// and fails that invocation; returns whether one was running.
    pub(crate) fn crash(&self, kind: &str) -> bool {
        let victim = lock(&self.shared.environments)
            .iter()
            .find_map(|environment| {
                let busy = environment.busy.as_ref()?;
                (first_key(&busy.payload) == kind && !environment.dead).then_some(environment.id)
            });
        match victim {
            Some(id) => {
                kill(&self.shared, id, false);
                true
            }
            None => false,
        }
    }
}

/// The Function URL and the Invoke API.
async fn front_door(
    shared: Arc<Shared>,
    request: hyper::Request<Incoming>,
) -> hyper::Response<BoxedBody> {
    let path = request.uri().path().to_owned();
    if request.method() == hyper::Method::POST && path.starts_with("/2015-03-31/functions/") {
        let asynchronous = request
            .headers()
            .get("x-amz-invocation-type")
            .is_some_and(|value| value == "Event");
        let body = request.into_body().collect().await.map(|b| b.to_bytes());
        let Ok(payload) =
            body.map(|body| serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null))
        else {
            return plain(400, "unreadable");
        };
        if !asynchronous {
            return plain(
                400,
                "only asynchronous invocations (InvocationType=Event) are emulated",
            );
        }
        deliver_async(shared, payload, 1);
        return plain(202, "");
    }
    let event = match function_url_event(request).await {
        Ok(event) => event,
        Err(error) => return plain(400, &error),
    };
    let (sender, receiver) = oneshot::channel();
    enqueue(
        &shared,
        Invocation {
            payload: event,
            responder: Responder::Sync(sender),
        },
    );
    match receiver.await {
        Ok(streamed) => streamed_response(streamed),
        // Killed before it answered: Lambda's 502 for a failed Function URL invocation.
        Err(_) => plain(502, "{\"Message\":\"Internal Server Error\"}"),
    }
}

type BoxedBody = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

fn plain(status: u16, body: &str) -> hyper::Response<BoxedBody> {
    hyper::Response::builder()
        .status(status)
        .body(
            Full::new(Bytes::from(body.to_owned()))
                .map_err(|never| match never {})
                .boxed(),
        )
        .unwrap()
}

/// The function's streamed answer as the Function URL's response: the prelude's status,
/// headers and cookies, then the body as it comes (cut if the environment is killed).
fn streamed_response(streamed: Streamed) -> hyper::Response<BoxedBody> {
    let mut builder = hyper::Response::builder().status(
        streamed.prelude["statusCode"]
            .as_u64()
            .and_then(|status| u16::try_from(status).ok())
            .unwrap_or(200),
    );
    if let Some(headers) = streamed.prelude["headers"].as_object() {
        for (name, value) in headers {
            if let Some(value) = value.as_str() {
                builder = builder.header(name, value);
            }
        }
    }
    if let Some(cookies) = streamed.prelude["cookies"].as_array() {
        for cookie in cookies.iter().filter_map(Value::as_str) {
            builder = builder.header("set-cookie", cookie);
        }
    }
    let chunks = futures_util::stream::unfold(streamed.body, |mut body| async move {
        body.recv()
            .await
            .map(|chunk| (chunk.map(Frame::data), body))
    });
    builder.body(StreamBody::new(chunks).boxed()).unwrap()
}

/// A Function URL request as the payload 2.0 event Lambda hands the function.
async fn function_url_event(request: hyper::Request<Incoming>) -> Result<Value, String> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    let mut headers = serde_json::Map::new();
    for name in parts.headers.keys() {
        let values: Vec<&str> = parts
            .headers
            .get_all(name)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .collect();
        headers.insert(name.as_str().to_owned(), json!(values.join(",")));
    }
    let now = chrono::Utc::now();
    let (text, base64) = match std::str::from_utf8(&body) {
        Ok(text) => (text.to_owned(), false),
        Err(_) => (
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &body),
            true,
        ),
    };
    Ok(json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": parts.uri.path(),
        "rawQueryString": parts.uri.query().unwrap_or_default(),
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "emulator",
            "domainName": "emulator.lambda-url.us-east-1.on.aws",
            "domainPrefix": "emulator",
            "http": {
                "method": parts.method.as_str(),
                "path": parts.uri.path(),
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": parts.headers.get("user-agent").and_then(|v| v.to_str().ok()).unwrap_or("emulator"),
            },
            "requestId": uuid::Uuid::new_v4().to_string(),
            "routeKey": "$default",
            "stage": "$default",
            "time": now.format("%d/%b/%Y:%H:%M:%S +0000").to_string(),
            "timeEpoch": now.timestamp_millis(),
        },
        "body": text,
        "isBase64Encoded": base64,
    }))
}

/// An asynchronous invocation, delivered as the policy says: after its delay, and again later
/// when duplicates are on.
fn deliver_async(shared: Arc<Shared>, payload: Value, attempt: u32) {
    let delivery = shared.settings.delivery.clone();
    let copies: Vec<Duration> = std::iter::once(delivery.delay)
        .chain(
            delivery
                .duplicate_after
                .filter(|_| attempt == 1)
                .map(|after| delivery.delay + after),
        )
        .collect();
    for delay in copies {
        let shared = shared.clone();
        let payload = payload.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            enqueue(
                &shared,
                Invocation {
                    payload,
                    responder: Responder::Async { attempt },
                },
            );
        });
    }
}

/// Queues an invocation, and starts an environment when none is waiting for one.
fn enqueue(shared: &Arc<Shared>, invocation: Invocation) {
    lock(&shared.queue).push_back(invocation);
    let waiting = *lock(&shared.idle);
    let queued = lock(&shared.queue).len();
    if queued > waiting {
        let alive = lock(&shared.environments)
            .iter()
            .filter(|environment| !environment.dead)
            .count();
        if alive < shared.settings.max_environments {
            start_environment(shared.clone());
        }
    }
    shared.work.notify_waiters();
}

/// A new execution environment: its Runtime API listener, then the function's process.
fn start_environment(shared: Arc<Shared>) {
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    lock(&shared.log).push(format!(
        "[emulator {:.3}] environment {id} starts",
        shared.epoch.elapsed().as_secs_f64()
    ));
    lock(&shared.environments).push(Environment {
        id,
        pid: None,
        child: None,
        busy: None,
        frozen: false,
        dead: false,
    });
    tokio::spawn(async move {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api = listener.local_addr().unwrap().to_string();
        let serving = shared.clone();
        // Detached: the environment's Runtime API lives as long as the test process.
        crate::loopback::serve(listener, move |request| {
            let shared = serving.clone();
            async move { runtime_api(shared, id, request).await }
        });
        let mut command = tokio::process::Command::new(&shared.binary);
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", &api)
            .env("AWS_LAMBDA_FUNCTION_NAME", "agui-lambda")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_LOG_STREAM_NAME", format!("environment-{id}"))
            .env("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/agui-lambda")
            .env("AWS_ENDPOINT_URL_LAMBDA", &shared.front_url)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "emulator")
            .env("AWS_SECRET_ACCESS_KEY", "emulator")
            .env("AWS_EC2_METADATA_DISABLED", "true");
        for (name, value) in &shared.settings.env {
            command.env(name, value);
        }
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        for pipe in [
            child
                .stdout
                .take()
                .map(|out| Box::new(out) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
            child
                .stderr
                .take()
                .map(|err| Box::new(err) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
        ]
        .into_iter()
        .flatten()
        {
            let log = shared.log.clone();
            let epoch = shared.epoch;
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(pipe).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    lock(&log).push(format!(
                        "[env {id} {:.3}] {line}",
                        epoch.elapsed().as_secs_f64()
                    ));
                }
            });
        }
        let mut environments = lock(&shared.environments);
        if let Some(environment) = environments.iter_mut().find(|e| e.id == id) {
            environment.pid = child.id();
            environment.child = Some(child);
        }
    });
}

fn first_key(payload: &Value) -> String {
    match payload.get("rawPath").and_then(Value::as_str) {
        Some(path) => path.to_owned(),
        None => payload
            .as_object()
            .and_then(|object| object.keys().next().cloned())
            .unwrap_or_default(),
    }
}

/// One environment's Runtime API.
async fn runtime_api(
    shared: Arc<Shared>,
    id: u64,
    request: hyper::Request<Incoming>,
) -> hyper::Response<BoxedBody> {
    let path = request.uri().path().to_owned();
    if path == "/2018-06-01/runtime/invocation/next" {
        return next_invocation(shared, id).await;
    }
    if path == "/2018-06-01/runtime/init/error" {
        let body = request
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        lock(&shared.log).push(format!(
            "[env {id}] init error: {}",
            String::from_utf8_lossy(&body)
        ));
        return plain(202, "{}");
    }
    let Some(rest) = path.strip_prefix("/2018-06-01/runtime/invocation/") else {
        return plain(404, "unknown");
    };
    let (request_id, what) = rest.split_once('/').unwrap_or((rest, ""));
    match what {
        "response" => response(shared, id, request_id.to_owned(), request.into_body()).await,
        "error" => {
            let body = request
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            lock(&shared.log).push(format!(
                "[env {id}] invocation error: {}",
                String::from_utf8_lossy(&body)
            ));
            finish(&shared, id, request_id, None, true);
            plain(202, "{}")
        }
        _ => plain(404, "unknown"),
    }
}

/// `/next`: the environment is idle (and frozen, as Lambda freezes it) until an invocation
/// comes; its deadline starts then.
async fn next_invocation(shared: Arc<Shared>, id: u64) -> hyper::Response<BoxedBody> {
    // The last invocation (if any) is over for this environment.
    if let Some(environment) = lock(&shared.environments).iter_mut().find(|e| e.id == id) {
        environment.busy = None;
    }
    *lock(&shared.idle) += 1;
    let mut froze = false;
    let invocation = loop {
        let notified = shared.work.notified();
        if let Some(invocation) = lock(&shared.queue).pop_front() {
            break invocation;
        }
        if !froze {
            froze = true;
            freeze(&shared, id, true);
        }
        notified.await;
    };
    *lock(&shared.idle) -= 1;
    freeze(&shared, id, false);
    let request_id = uuid::Uuid::new_v4().to_string();
    let number = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let timeout = shared.settings.timeout;
    let deadline_ms =
        chrono::Utc::now().timestamp_millis() + i64::try_from(timeout.as_millis()).unwrap();
    let (asynchronous, attempt, sink) = match invocation.responder {
        Responder::Sync(sink) => (false, 0, Some(sink)),
        Responder::Async { attempt } => (true, attempt, None),
    };
    lock(&shared.log).push(format!(
        "[emulator {:.3}] environment {id} invoked: {}",
        shared.epoch.elapsed().as_secs_f64(),
        first_key(&invocation.payload)
    ));
    lock(&shared.records).push(Record {
        asynchronous,
        kind: first_key(&invocation.payload),
        payload: invocation.payload.clone(),
        environment: id,
        answer: None,
        timed_out: false,
        started: Instant::now(),
    });
    if let Some(environment) = lock(&shared.environments).iter_mut().find(|e| e.id == id) {
        environment.busy = Some(Busy {
            request_id: request_id.clone(),
            invocation: number,
            payload: invocation.payload.clone(),
            asynchronous,
            attempt,
            sink,
            chunks: None,
        });
    }
    // The timeout: the environment's process is killed if the invocation is still running.
    let watching = shared.clone();
    tokio::spawn(async move {
        tokio::time::sleep(timeout).await;
        let still = lock(&watching.environments).iter().any(|environment| {
            environment.id == id
                && environment
                    .busy
                    .as_ref()
                    .is_some_and(|busy| busy.invocation == number)
        });
        if still {
            kill(&watching, id, true);
        }
    });
    hyper::Response::builder()
        .status(200)
        .header("lambda-runtime-aws-request-id", &request_id)
        .header("lambda-runtime-deadline-ms", deadline_ms.to_string())
        .header(
            "lambda-runtime-invoked-function-arn",
            "arn:aws:lambda:us-east-1:123456789012:function:agui-lambda",
        )
        .header("lambda-runtime-trace-id", xray_header())
        .body(
            Full::new(Bytes::from(invocation.payload.to_string()))
                .map_err(|never| match never {})
                .boxed(),
        )
        .unwrap()
}

/// A new X-Ray trace for the invocation, sampled (the template's active tracing), as Lambda
/// hands it over.
fn xray_header() -> String {
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "Root=1-{:08x}-{};Parent={};Sampled=1",
        chrono::Utc::now().timestamp(),
        &random[..24],
        &random[16..32]
    )
}

fn freeze(shared: &Shared, id: u64, frozen: bool) {
    let mut environments = lock(&shared.environments);
    let Some(environment) = environments.iter_mut().find(|e| e.id == id) else {
        return;
    };
    if environment.frozen == frozen || environment.dead {
        return;
    }
    environment.frozen = frozen;
    if let Some(pid) = environment.pid {
        signal(pid, if frozen { "STOP" } else { "CONT" });
    }
}

/// `/response`: the streamed answer, its prelude to the waiting Function URL request and its
/// chunks after it; an asynchronous invocation's answer is kept for the records.
async fn response(
    shared: Arc<Shared>,
    id: u64,
    request_id: String,
    mut body: Incoming,
) -> hyper::Response<BoxedBody> {
    let sink = {
        let mut environments = lock(&shared.environments);
        environments
            .iter_mut()
            .find(|e| e.id == id)
            .and_then(|environment| environment.busy.as_mut())
            .filter(|busy| busy.request_id == request_id)
            .and_then(|busy| busy.sink.take())
    };
    let mut buffer = Vec::new();
    let mut sender: Option<mpsc::Sender<Result<Bytes, std::io::Error>>> = None;
    #[allow(unused_assignments, reason = "only set once the prelude went")]
    let _ = &sender;
    let mut sink = sink;
    while let Some(Ok(frame)) = body.frame().await {
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if let Some(sender) = &sender {
            let _ = sender.send(Ok(data)).await;
            continue;
        }
        buffer.extend_from_slice(&data);
        let Some(at) = find_delimiter(&buffer) else {
            continue;
        };
        let prelude: Value = serde_json::from_slice(&buffer[..at]).unwrap_or(Value::Null);
        let rest = Bytes::copy_from_slice(&buffer[at + 8..]);
        if let Some(waiting) = sink.take() {
            let (tx, rx) = mpsc::channel(64);
            if !rest.is_empty() {
                let _ = tx.send(Ok(rest)).await;
            }
            if let Some(environment) = lock(&shared.environments)
                .iter_mut()
                .find(|e| e.id == id)
                .and_then(|environment| environment.busy.as_mut())
            {
                environment.chunks = Some(tx.clone());
            }
            let _ = waiting.send(Streamed { prelude, body: rx });
            sender = Some(tx);
            buffer.clear();
        } else {
            buffer = rest.to_vec();
            // An asynchronous invocation: the rest is its answer.
            while let Some(Ok(frame)) = body.frame().await {
                if let Ok(data) = frame.into_data() {
                    buffer.extend_from_slice(&data);
                }
            }
            break;
        }
    }
    let answer = (!buffer.is_empty()).then(|| String::from_utf8_lossy(&buffer).into_owned());
    finish(&shared, id, &request_id, answer, false);
    plain(202, "{}")
}

fn find_delimiter(buffer: &[u8]) -> Option<usize> {
    buffer.windows(8).position(|window| window == [0u8; 8])
}

/// The invocation's answer is in (the environment stays busy until its next `/next`): its
/// body's end for a Function URL request, its record for an asynchronous one, and a retry when
/// it failed.
fn finish(shared: &Arc<Shared>, id: u64, request_id: &str, answer: Option<String>, failed: bool) {
    let busy = {
        let mut environments = lock(&shared.environments);
        let Some(environment) = environments.iter_mut().find(|e| e.id == id) else {
            return;
        };
        let Some(busy) = environment
            .busy
            .as_mut()
            .filter(|busy| busy.request_id == request_id)
        else {
            return;
        };
        busy.chunks = None;
        (busy.asynchronous, busy.attempt, busy.payload.clone())
    };
    if let Some(record) = lock(&shared.records)
        .iter_mut()
        .rev()
        .find(|record| record.environment == id && record.answer.is_none())
    {
        record.answer = answer.or_else(|| failed.then(|| "failed".to_owned()));
    }
    let (asynchronous, attempt, payload) = busy;
    if failed && asynchronous {
        retry(shared, payload, attempt);
    }
}

/// A failed asynchronous invocation is delivered again, as Lambda does, while attempts last.
fn retry(shared: &Arc<Shared>, payload: Value, attempt: u32) {
    let delivery = &shared.settings.delivery;
    if attempt > delivery.retries {
        return;
    }
    let shared = shared.clone();
    let delay = delivery.retry_delay;
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        deliver_async(shared, payload, attempt + 1);
    });
}

/// Kills an environment's process (its timeout, or a crash): its Function URL stream is cut,
/// its asynchronous invocation retried.
fn kill(shared: &Arc<Shared>, id: u64, timed_out: bool) {
    let busy = {
        let mut environments = lock(&shared.environments);
        let Some(environment) = environments.iter_mut().find(|e| e.id == id) else {
            return;
        };
        environment.dead = true;
        if let Some(child) = environment.child.as_mut() {
            let _ = child.start_kill();
        }
        if let Some(pid) = environment.pid {
            signal(pid, "KILL");
        }
        environment.busy.take()
    };
    lock(&shared.log).push(format!(
        "[emulator {:.3}] environment {id} killed ({})",
        shared.epoch.elapsed().as_secs_f64(),
        if timed_out { "timeout" } else { "crash" }
    ));
    let Some(busy) = busy else {
        return;
    };
    if let Some(record) = lock(&shared.records)
        .iter_mut()
        .rev()
        .find(|record| record.environment == id)
    {
        record.timed_out = timed_out;
        record.answer.get_or_insert_with(|| "killed".to_owned());
    }
    if let Some(chunks) = busy.chunks {
        let _ = chunks.try_send(Err(std::io::Error::other("the function was killed")));
    }
    if busy.asynchronous {
        retry(shared, busy.payload, busy.attempt);
    }
}
