//! One resilience policy above every provider: a call is retried while nothing has been
//! streamed (retryable failures only, waiting as the provider asks or with jittered backoff,
//! within a total wait), every stream is bounded by an idle timeout, and a model that fails
//! before any output gives way to the next of `MODEL_FALLBACKS` (a model that keeps failing is
//! passed over for a while: its cooldown). After the first output nothing is retried.

use super::failure::{FailureKind, backoff_delay};
use super::{
    Attempt, DeltaStream, ModelDelta, ModelError, ModelIdentity, ModelProvider, ModelRequest,
    Served,
};
use crate::protocol::UserPart;
use async_trait::async_trait;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The longest wait a provider's `retry-after` is honoured for; a longer one moves on to the
/// next model (the official SDKs' rule).
const MAX_HONOURED_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How calls are retried and bounded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    /// Retries of one model's call.
    pub max_retries: u32,
    /// The most one model's retries may wait in all.
    pub max_wait: Duration,
    /// A stream silent this long has failed.
    pub idle_timeout: Duration,
    /// How long a model whose call failed is passed over.
    pub cooldown: Duration,
}

/// When each model may be called again, shared by every model of a warm instance.
#[derive(Debug, Default)]
pub(crate) struct Cooldowns {
    until: Mutex<HashMap<String, Instant>>,
}

impl Cooldowns {
    fn cooling(&self, key: &str) -> bool {
        self.lock()
            .get(key)
            .is_some_and(|until| *until > Instant::now())
    }

    fn start(&self, key: &str, cooldown: Duration) {
        if !cooldown.is_zero() {
            self.lock()
                .insert(key.to_owned(), Instant::now() + cooldown);
        }
    }

    fn clear(&self, key: &str) {
        self.lock().remove(key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        // A poisoned map only holds instants: still good.
        self.until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A model and the models it falls back to, called under one [`RetryPolicy`].
pub(crate) struct Resilient {
    /// The primary first, then the fallbacks in order.
    chain: Vec<Arc<dyn ModelProvider>>,
    policy: RetryPolicy,
    cooldowns: Arc<Cooldowns>,
}

impl Resilient {
    pub(crate) fn new(
        primary: Arc<dyn ModelProvider>,
        fallbacks: Vec<Arc<dyn ModelProvider>>,
        policy: RetryPolicy,
        cooldowns: Arc<Cooldowns>,
    ) -> Self {
        let mut chain = vec![primary];
        chain.extend(fallbacks);
        Self {
            chain,
            policy,
            cooldowns,
        }
    }

    /// The chain in the order to try it: models cooling down go last (tried only when every
    /// other has failed).
    fn order(&self) -> Vec<&Arc<dyn ModelProvider>> {
        let (ready, cooling): (Vec<_>, Vec<_>) = self
            .chain
            .iter()
            .partition(|model| !self.cooldowns.cooling(&key(model.as_ref())));
        ready.into_iter().chain(cooling).collect()
    }

    /// One model's call with its retries: the stream once it has produced output (or ended),
    /// or the last failure.
    async fn call(
        &self,
        model: &Arc<dyn ModelProvider>,
        request: &ModelRequest,
        attempts: &mut Vec<Attempt>,
    ) -> Result<(Vec<ModelDelta>, DeltaStream), ModelError> {
        let name = key(model.as_ref());
        let mut waited = Duration::ZERO;
        let mut retry = 0;
        loop {
            let outcome = self.open(model.as_ref(), request).await;
            let error = match outcome {
                Ok(opened) => {
                    attempts.push(Attempt {
                        model: name,
                        outcome: "ok".to_owned(),
                    });
                    return Ok(opened);
                }
                Err(error) => error,
            };
            attempts.push(Attempt {
                model: name.clone(),
                outcome: describe(&error),
            });
            tracing::warn!(model = %name, retry, error = %error, "model call failed before any output");
            if !error.is_retryable() || retry >= self.policy.max_retries {
                return Err(error);
            }
            let wait = match error.retry_after() {
                Some(after) if after > MAX_HONOURED_RETRY_AFTER => return Err(error),
                Some(after) => after,
                None => backoff_delay(retry),
            };
            if waited + wait > self.policy.max_wait {
                return Err(error);
            }
            tokio::time::sleep(wait).await;
            waited += wait;
            retry += 1;
        }
    }

    /// Opens the model's stream and reads it up to its first output: what came before it (ids,
    /// usage) and the stream from there. A failure or a silence before any output is the
    /// call's failure.
    async fn open(
        &self,
        model: &dyn ModelProvider,
        request: &ModelRequest,
    ) -> Result<(Vec<ModelDelta>, DeltaStream), ModelError> {
        let idle = self.policy.idle_timeout;
        let mut stream = tokio::time::timeout(idle, model.stream(request))
            .await
            .map_err(|_| ModelError::IdleTimeout(idle))??;
        let mut head = Vec::new();
        loop {
            let next = tokio::time::timeout(idle, stream.next())
                .await
                .map_err(|_| ModelError::IdleTimeout(idle))?;
            match next {
                Some(Ok(delta)) => {
                    let output = delta.is_output();
                    head.push(delta);
                    if output {
                        return Ok((head, stream));
                    }
                }
                Some(Err(error)) => return Err(error),
                // An answer with no output at all (an empty reply): complete as it is.
                None => return Ok((head, Box::pin(futures_util::stream::empty()))),
            }
        }
    }
}

/// `provider:model`, the key of a model's cooldown and its name in attempt lists.
fn key(model: &dyn ModelProvider) -> String {
    let identity = model.identity();
    format!("{}:{}", identity.provider, identity.model)
}

/// A failed attempt as the run's log line and trace list it: `unavailable: …`.
fn describe(error: &ModelError) -> String {
    format!("{}: {error}", error.kind().as_str())
}

/// Whether a failure of this kind sends the model into its cooldown: the model, not the
/// request, is what failed.
fn cools_down(kind: FailureKind) -> bool {
    matches!(
        kind,
        FailureKind::RateLimited
            | FailureKind::QuotaExhausted
            | FailureKind::Unavailable
            | FailureKind::TimedOut
            | FailureKind::Broken
    )
}

#[async_trait]
impl ModelProvider for Resilient {
    async fn stream(&self, request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        let mut attempts = Vec::new();
        let mut last = None;
        for model in self.order() {
            match self.call(model, request, &mut attempts).await {
                Ok((head, rest)) => {
                    let name = key(model.as_ref());
                    self.cooldowns.clear(&name);
                    let served = ModelDelta::Served(Served {
                        identity: model.identity(),
                        attempts,
                    });
                    let head =
                        futures_util::stream::iter(std::iter::once(served).chain(head).map(Ok));
                    return Ok(Box::pin(
                        head.chain(with_idle_timeout(rest, self.policy.idle_timeout)),
                    ));
                }
                // The run answers an overflow by compacting: another model is not the answer.
                Err(error) if error.kind() == FailureKind::Overflow => return Err(error),
                Err(error) => {
                    if cools_down(error.kind()) && self.chain.len() > 1 {
                        self.cooldowns
                            .start(&key(model.as_ref()), self.policy.cooldown);
                    }
                    last = Some(error);
                }
            }
        }
        let last = last.unwrap_or_else(|| ModelError::Unreachable("no model to call".to_owned()));
        Err(if attempts.len() > 1 {
            ModelError::Exhausted {
                last: Box::new(last),
                attempts,
            }
        } else {
            last
        })
    }

    fn describe(&self) -> String {
        let fallbacks: Vec<String> = self.chain[1..]
            .iter()
            .map(|model| key(model.as_ref()))
            .collect();
        let primary = self.chain[0].describe();
        if fallbacks.is_empty() {
            primary
        } else {
            format!("{primary}, falling back to {}", fallbacks.join(", "))
        }
    }

    fn identity(&self) -> ModelIdentity {
        self.chain[0].identity()
    }

    fn check_part(&self, part: &UserPart) -> Result<(), String> {
        self.chain[0].check_part(part)
    }

    fn reads_s3(&self) -> bool {
        self.chain[0].reads_s3()
    }
}

/// The stream, failing with [`ModelError::IdleTimeout`] when nothing arrives for `idle`.
fn with_idle_timeout(stream: DeltaStream, idle: Duration) -> DeltaStream {
    Box::pin(async_stream::stream! {
        let mut stream = stream;
        loop {
            match tokio::time::timeout(idle, stream.next()).await {
                Ok(Some(item)) => {
                    let failed = item.is_err();
                    yield item;
                    if failed {
                        return;
                    }
                }
                Ok(None) => return,
                Err(_) => {
                    tracing::warn!(idle_ms = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX), "model stream went silent");
                    yield Err(ModelError::IdleTimeout(idle));
                    return;
                }
            }
        }
    })
}

#[cfg(test)]
#[path = "resilient_tests.rs"]
mod tests;
