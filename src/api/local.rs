//! The same routes as a plain HTTP/1.1 server, for local use, containers and benchmarks.

use super::{ApiError, App, ResponseBody, json_response};
use crate::protocol::InputError;
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Binds `addr` (port 0 picks a free one) and serves until the task is dropped.
pub async fn bind(
    app: Arc<App>,
    addr: SocketAddr,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let server = tokio::spawn(async move {
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
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let app = app.clone();
                    async move { Ok::<_, Infallible>(handle(&app, request).await) }
                });
                if let Err(err) = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await
                {
                    tracing::debug!(error = %err, "connection ended with an error");
                }
            });
        }
    });
    Ok((local, server))
}

async fn handle(app: &App, request: hyper::Request<Incoming>) -> hyper::Response<ResponseBody> {
    let (parts, body) = request.into_parts();
    // Refuse an oversized body as soon as it passes the limit, without buffering the rest.
    let limit = app.max_payload_bytes();
    let bytes: Bytes = match Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => {
            let error = if err
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                ApiError::Input(InputError::TooLarge { limit })
            } else {
                ApiError::UnreadableBody("the request body could not be read")
            };
            return json_response(error.status(), error.body());
        }
    };
    app.handle(hyper::Request::from_parts(parts, bytes), None)
        .await
}
