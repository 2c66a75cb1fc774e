//! The same routes as a plain HTTP/1.1 server, for local use, containers (AgentCore Runtime
//! included) and benchmarks; closed cleanly once a stop has drained the runs.

use super::app::App;
use super::body::ResponseBody;
use super::error::ApiError;
use bytes::BytesMut;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

#[cfg(any(test, feature = "test-utils"))]
/// Binds `addr` (port 0 picks a free one) and serves until the task is dropped.
pub async fn bind(
    app: Arc<App>,
    addr: SocketAddr,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let server = Server::bind(app, addr).await?;
    Ok((server.addr, server.accept))
}

/// A listening server, and what it takes to close it cleanly.
pub(crate) struct Server {
    pub addr: SocketAddr,
    accept: tokio::task::JoinHandle<()>,
    /// Tells every connection to finish the response it is sending, then close.
    closing: CancellationToken,
    /// Open connections; [`Server::close`] waits for none.
    open: Arc<watch::Sender<usize>>,
}

/// One open connection, counted while it lives.
struct Open(Arc<watch::Sender<usize>>);

impl Open {
    fn new(open: &Arc<watch::Sender<usize>>) -> Self {
        open.send_modify(|count| *count += 1);
        Self(open.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.send_modify(|count| *count = count.saturating_sub(1));
    }
}

impl Server {
    pub(crate) async fn bind(app: Arc<App>, addr: SocketAddr) -> std::io::Result<Self> {
        app.remember_self();
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let closing = CancellationToken::new();
        let open = Arc::new(watch::Sender::new(0));
        let accept = tokio::spawn(accept_loop(listener, app, closing.clone(), open.clone()));
        Ok(Self {
            addr,
            accept,
            closing,
            open,
        })
    }

    /// Stops accepting, lets each connection finish the response it is sending (the runs have
    /// ended, so their streams end too) and waits up to `wait` for all to close.
    pub(crate) async fn close(self, wait: std::time::Duration) {
        self.accept.abort();
        self.closing.cancel();
        let mut open = self.open.subscribe();
        if tokio::time::timeout(wait, open.wait_for(|count| *count == 0))
            .await
            .is_err()
        {
            tracing::warn!(
                connections = *self.open.borrow(),
                "connections still open at exit"
            );
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    app: Arc<App>,
    closing: CancellationToken,
    open: Arc<watch::Sender<usize>>,
) {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(err) => {
                tracing::warn!(error = %err, "accept failed");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let closing = closing.clone();
        let counted = Open::new(&open);
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let app = app.clone();
                async move { Ok::<_, Infallible>(handle(&app, request).await) }
            });
            let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                () = closing.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(err) = ended {
                tracing::debug!(error = %err, "connection ended with an error");
            }
            drop(counted);
        });
    }
}

/// A body over the limit is refused, but only after the rest of it is read and dropped (up to
/// `DRAIN_BYTES` or `DRAIN_TIME`): a client still sending when the server closes gets `EPIPE`
/// instead of the 413 (Node's `fetch` two times in three).
const DRAIN_BYTES: usize = 64 * 1024 * 1024;
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(5);

async fn handle(app: &App, request: hyper::Request<Incoming>) -> hyper::Response<ResponseBody> {
    let (parts, mut body) = request.into_parts();
    let (limit, too_large) = app.body_limit(&parts.method, parts.uri.path());
    let mut bytes = BytesMut::new();
    let refusal = loop {
        match body.frame().await {
            None => break None,
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    if bytes.len() + data.len() > limit {
                        drain(&mut body, bytes.len() + data.len()).await;
                        break Some(ApiError::Input(too_large));
                    }
                    bytes.extend_from_slice(&data);
                }
            }
            Some(Err(_)) => {
                break Some(ApiError::UnreadableBody(
                    "the request body could not be read",
                ));
            }
        }
    };
    if let Some(error) = refusal {
        return app.refusal(parts.uri.path(), &parts.headers, &error);
    }
    app.handle(hyper::Request::from_parts(parts, bytes.freeze()), None)
        .await
}

async fn drain(body: &mut Incoming, mut read: usize) {
    let _ = tokio::time::timeout(DRAIN_TIME, async {
        while read < DRAIN_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => read += frame.data_ref().map_or(0, |data| data.len()),
                _ => break,
            }
        }
    })
    .await;
}
