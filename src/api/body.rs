//! One response body type for JSON answers and SSE streams, usable by the Lambda streaming
//! runtime and by hyper alike. It never fails: errors inside a stream are `RUN_ERROR` events.

use bytes::Bytes;
use futures_util::Stream;
use http_body::{Body, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

pub struct ResponseBody(Kind);

enum Kind {
    Full(Option<Bytes>),
    Stream(Pin<Box<dyn Stream<Item = Bytes> + Send>>),
}

impl ResponseBody {
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        Self(Kind::Full(Some(bytes.into())))
    }

    pub(crate) fn stream(stream: impl Stream<Item = Bytes> + Send + 'static) -> Self {
        Self(Kind::Stream(Box::pin(stream)))
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.0 {
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes)))),
            Kind::Stream(stream) => stream
                .as_mut()
                .poll_next(cx)
                .map(|next| next.map(|bytes| Ok(Frame::data(bytes)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(&self.0, Kind::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Kind::Full(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            Kind::Full(None) => SizeHint::with_exact(0),
            // No length: a streamed answer must never carry content-length.
            Kind::Stream(_) => SizeHint::default(),
        }
    }
}
