//! A loopback HTTP proxy in front of DynamoDB Local, for one app's store: it logs every call it
//! forwards (the operation and its JSON), so a test counts the store calls between two moments;
//! and it stands for the process crashing at a chosen call, forwarding it or not, and from then
//! on answering nothing: the app can no longer change anything, as a process that died.

use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One call the proxy forwarded (or swallowed, crashing).
#[derive(Debug, Clone)]
pub(crate) struct Call {
    /// `PutItem`, `TransactWriteItems`, `GetItem`, `Query`…
    pub(crate) operation: String,
    pub(crate) body: Value,
}

impl Call {
    pub(crate) fn is_write(&self) -> bool {
        matches!(
            self.operation.as_str(),
            "PutItem" | "UpdateItem" | "DeleteItem" | "TransactWriteItems" | "BatchWriteItem"
        )
    }

    /// The call's JSON holds `text` (an attribute name or value).
    pub(crate) fn holds(&self, text: &str) -> bool {
        self.body.to_string().contains(text)
    }
}

/// Where the proxy crashes: at the first call that `matches`, which it forwards first or not.
pub(crate) struct CrashAt {
    pub(crate) matches: fn(&Call) -> bool,
    pub(crate) forwarded: bool,
}

#[derive(Default)]
struct State {
    calls: Vec<Call>,
    crash: Option<CrashAt>,
    crashed: bool,
}

pub(crate) struct DynamoProxy {
    pub(crate) url: String,
    state: Arc<Mutex<State>>,
    _server: tokio::task::JoinHandle<()>,
}

impl DynamoProxy {
    /// A proxy to DynamoDB Local at `target`.
    pub(crate) async fn start(target: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let http = reqwest::Client::new();
        let target = target.to_owned();
        let server = tokio::spawn({
            let state = state.clone();
            async move {
                loop {
                    let (socket, _) = listener.accept().await.unwrap();
                    tokio::spawn(serve(socket, state.clone(), http.clone(), target.clone()));
                }
            }
        });
        Self {
            url,
            state,
            _server: server,
        }
    }

    /// Crash at the first call `crash` names.
    pub(crate) fn crash_at(&self, crash: CrashAt) {
        self.state.lock().unwrap().crash = Some(crash);
    }

    pub(crate) fn crashed(&self) -> bool {
        self.state.lock().unwrap().crashed
    }

    /// Every call so far, in the order they came.
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.state.lock().unwrap().calls.clone()
    }
}

/// One connection: requests in turn (the SDK keeps connections alive), each forwarded whole.
async fn serve(
    mut socket: TcpStream,
    state: Arc<Mutex<State>>,
    http: reqwest::Client,
    target: String,
) {
    let mut buffer = Vec::new();
    while let Some((head, body)) = next_request(&mut socket, &mut buffer).await {
        let header = |name: &str| {
            head.lines()
                .find_map(|line| {
                    let (key, value) = line.split_once(':')?;
                    key.trim()
                        .eq_ignore_ascii_case(name)
                        .then(|| value.trim().to_owned())
                })
                .unwrap_or_default()
        };
        let target_header = header("x-amz-target");
        let call = Call {
            operation: target_header
                .rsplit('.')
                .next()
                .unwrap_or_default()
                .to_owned(),
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        };
        let forward = {
            let mut state = state.lock().unwrap();
            if state.crashed {
                None
            } else {
                let crashes = state.crash.as_ref().filter(|crash| (crash.matches)(&call));
                let forward = crashes.is_none_or(|crash| crash.forwarded);
                if crashes.is_some() {
                    state.crashed = true;
                }
                state.calls.push(call);
                Some((forward, state.crashed))
            }
        };
        let Some((true, crashed)) = forward else {
            // Crashed: nothing is answered any more.
            return std::future::pending().await;
        };
        let mut request = http
            .post(&target)
            .body(body)
            .header("content-type", header("content-type"))
            .header("x-amz-target", target_header)
            .header("x-amz-date", header("x-amz-date"));
        let authorization = header("authorization");
        if !authorization.is_empty() {
            request = request.header("authorization", authorization);
        }
        let Ok(response) = request.send().await else {
            return;
        };
        if crashed {
            // Forwarded, and the process died before it heard back.
            return std::future::pending().await;
        }
        let status = response.status().as_u16();
        let mut reply = format!("HTTP/1.1 {status} OK\r\n");
        for name in ["content-type", "x-amz-crc32", "x-amzn-requestid"] {
            if let Some(value) = response.headers().get(name) {
                reply.push_str(&format!(
                    "{name}: {}\r\n",
                    value.to_str().unwrap_or_default()
                ));
            }
        }
        let body = response.bytes().await.unwrap_or_default();
        reply.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
        if socket.write_all(reply.as_bytes()).await.is_err()
            || socket.write_all(&body).await.is_err()
        {
            return;
        }
    }
}

/// The next request on the connection: its head and its body (as its `content-length` says);
/// `None` once the client closed it.
async fn next_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<(String, Vec<u8>)> {
    let mut chunk = [0u8; 65_536];
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break end + 4;
        }
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let body = buffer[head_end..head_end + length].to_vec();
    buffer.drain(..head_end + length);
    Some((head, body))
}
