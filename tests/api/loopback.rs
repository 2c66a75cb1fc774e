//! The loopback HTTP/1 server under the tests' stand-ins (the step model, slow MCP tools, the
//! Lambda emulator's front door, the strict Messages API): one accept loop, a task per
//! connection, each request answered by `handle`.

use hyper::body::{Body, Incoming};
use std::convert::Infallible;
use std::future::Future;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Serves `listener` until the returned task is dropped or aborted.
pub(crate) fn serve<H, F, B>(listener: TcpListener, handle: H) -> JoinHandle<()>
where
    H: Fn(hyper::Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = hyper::Response<B>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let handle = handle.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let answer = handle(request);
                    async move { Ok::<_, Infallible>(answer.await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(socket), service)
                    .await;
            });
        }
    })
}
