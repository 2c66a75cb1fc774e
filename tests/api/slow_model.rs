//! A real OpenAI-compatible Chat Completions server on loopback that streams one word every
//! `delay` and records when a client hangs up mid-answer: what a provider sees when a run is
//! cancelled.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::time::Instant;

pub(crate) struct SlowModel {
    pub url: String,
    hangups: Arc<Mutex<Vec<Instant>>>,
    requests: Arc<Mutex<u32>>,
    _server: tokio::task::JoinHandle<()>,
}

impl SlowModel {
    /// Answers every request with `words` words, one per `delay`.
    pub(crate) async fn start(words: usize, delay: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let hangups = Arc::new(Mutex::new(Vec::new()));
        let requests = Arc::new(Mutex::new(0));
        let server = tokio::spawn({
            let hangups = hangups.clone();
            let requests = requests.clone();
            async move {
                loop {
                    let (socket, _) = listener.accept().await.unwrap();
                    let hangups = hangups.clone();
                    let requests = requests.clone();
                    tokio::spawn(async move {
                        serve(socket, words, delay, hangups, requests).await;
                    });
                }
            }
        });
        Self {
            url,
            hangups,
            requests,
            _server: server,
        }
    }

    /// When clients hung up before the end of an answer.
    pub(crate) fn hangups(&self) -> Vec<Instant> {
        self.hangups.lock().unwrap().clone()
    }

    /// How many completions were requested.
    pub(crate) fn requests(&self) -> u32 {
        *self.requests.lock().unwrap()
    }
}

async fn serve(
    mut socket: tokio::net::TcpStream,
    words: usize,
    delay: Duration,
    hangups: Arc<Mutex<Vec<Instant>>>,
    requests: Arc<Mutex<u32>>,
) {
    // One request per connection.
    if super::window_model::read_request(&mut socket)
        .await
        .is_none()
    {
        return;
    }
    *requests.lock().unwrap() += 1;
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    for index in 0..words {
        let frame = format!(
            "data: {{\"id\":\"chatcmpl-slow\",\"object\":\"chat.completion.chunk\",\"model\":\"slow\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"word{index} \"}},\"finish_reason\":null}}]}}\n\n"
        );
        if socket.write_all(frame.as_bytes()).await.is_err() || socket.flush().await.is_err() {
            hangups.lock().unwrap().push(Instant::now());
            return;
        }
        // A closed peer shows up as a readable EOF before the next write fails.
        let mut probe = [0u8; 1];
        if let Ok(Ok(0)) = tokio::time::timeout(delay, socket.read(&mut probe)).await {
            hangups.lock().unwrap().push(Instant::now());
            return;
        }
    }
    let end = "data: {\"id\":\"chatcmpl-slow\",\"object\":\"chat.completion.chunk\",\"model\":\"slow\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let _ = socket.write_all(end.as_bytes()).await;
    let _ = socket.shutdown().await;
}
