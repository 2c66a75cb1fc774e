//! The policy on scripted models and a paused clock: what is retried, how long it waits, when
//! the next model answers, and that nothing is retried once output has streamed.

use super::*;
use crate::model::scripted::{ScriptedModel, ScriptedTurn};
use crate::model::{FinishReason, Refusal, RetryHint};

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        max_wait: Duration::from_secs(30),
        idle_timeout: Duration::from_secs(120),
        cooldown: Duration::from_secs(60),
    }
}

fn status(status: u16, code: Option<&str>, after: Option<Duration>) -> ModelError {
    ModelError::Status {
        status,
        refusal: code.map(|code| Refusal::new(Some(code.to_owned()), "said so")),
        retry: RetryHint {
            after,
            should_retry: None,
        },
    }
}

fn chain(models: &[&ScriptedModel], cooldowns: &Arc<Cooldowns>) -> Resilient {
    let mut models: Vec<Arc<dyn ModelProvider>> = models
        .iter()
        .map(|model| Arc::new((*model).clone()) as Arc<dyn ModelProvider>)
        .collect();
    let primary = models.remove(0);
    Resilient::new(primary, models, policy(), cooldowns.clone())
}

async fn collect(stream: DeltaStream) -> Vec<Result<ModelDelta, ModelError>> {
    stream.collect().await
}

fn served(deltas: &[Result<ModelDelta, ModelError>]) -> &Served {
    match &deltas[0] {
        Ok(ModelDelta::Served(served)) => served,
        other => panic!("the stream opens with {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_429_is_retried_after_the_wait_the_provider_asked_for() {
    let model = ScriptedModel::new([
        ScriptedTurn::Refuse(status(429, None, Some(Duration::from_millis(1_500)))),
        ScriptedTurn::text("hi"),
    ]);
    let resilient = chain(&[&model], &Arc::default());
    let began = Instant::now();
    let deltas = collect(resilient.stream(&ModelRequest::default()).await.unwrap()).await;
    assert_eq!(began.elapsed(), Duration::from_millis(1_500));
    let served = served(&deltas);
    assert_eq!(served.attempts.len(), 2);
    assert!(served.attempts[0].outcome.starts_with("rate_limited"));
    assert_eq!(deltas[1], Ok(ModelDelta::Text("hi".into())));
}

#[tokio::test(start_paused = true)]
async fn overload_in_the_stream_before_output_is_retried_and_out_of_quota_is_not() {
    let model = ScriptedModel::new([
        ScriptedTurn::StreamThenFail(
            vec![ModelDelta::ResponseId("msg_1".into())],
            status(529, Some("overloaded_error"), None),
        ),
        ScriptedTurn::text("back"),
    ]);
    let deltas = collect(
        chain(&[&model], &Arc::default())
            .stream(&ModelRequest::default())
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        deltas.last(),
        Some(&Ok(ModelDelta::Finish(FinishReason::Stop)))
    );
    assert_eq!(model.requests().len(), 2);

    let broke = ScriptedModel::new([
        ScriptedTurn::Refuse(status(429, Some("insufficient_quota"), None)),
        ScriptedTurn::text("never"),
    ]);
    let error = chain(&[&broke], &Arc::default())
        .stream(&ModelRequest::default())
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind(), FailureKind::QuotaExhausted);
    assert_eq!(broke.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_failure_after_output_is_not_retried() {
    let model = ScriptedModel::new([
        ScriptedTurn::StreamThenFail(
            vec![ModelDelta::Text("half".into())],
            status(500, None, None),
        ),
        ScriptedTurn::text("again"),
    ]);
    let deltas = collect(
        chain(&[&model], &Arc::default())
            .stream(&ModelRequest::default())
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(deltas[1], Ok(ModelDelta::Text("half".into())));
    assert!(deltas[2].is_err());
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_stall_ends_in_the_idle_timeout_and_the_next_model_answers() {
    let stalled = ScriptedModel::new([ScriptedTurn::Delay(
        Duration::from_secs(600),
        vec![ModelDelta::Text("too late".into())],
    )])
    .named("openai", "gpt-5");
    let fallback = ScriptedModel::new([ScriptedTurn::text("from claude")])
        .named("anthropic", "claude-haiku-4-5");
    let resilient = Resilient::new(
        Arc::new(stalled.clone()),
        vec![Arc::new(fallback.clone())],
        RetryPolicy {
            max_retries: 0,
            ..policy()
        },
        Arc::default(),
    );
    let began = Instant::now();
    let deltas = collect(resilient.stream(&ModelRequest::default()).await.unwrap()).await;
    assert_eq!(began.elapsed(), Duration::from_secs(120));
    let served = served(&deltas);
    assert_eq!(served.identity.model, "claude-haiku-4-5");
    assert_eq!(served.attempts[0].model, "openai:gpt-5");
    assert!(
        served.attempts[0].outcome.starts_with("timed_out"),
        "{:?}",
        served.attempts
    );
    assert_eq!(deltas[1], Ok(ModelDelta::Text("from claude".into())));
}

#[tokio::test(start_paused = true)]
async fn a_model_that_kept_failing_is_passed_over_during_its_cooldown() {
    let cooldowns: Arc<Cooldowns> = Arc::default();
    let primary = ScriptedModel::new([
        ScriptedTurn::Refuse(status(503, None, None)),
        ScriptedTurn::text("primary is back"),
    ])
    .named("openai", "gpt-5");
    let fallback = ScriptedModel::new([
        ScriptedTurn::text("fallback one"),
        ScriptedTurn::text("fallback two"),
    ])
    .named("bedrock", "nova");
    let resilient = Resilient::new(
        Arc::new(primary.clone()),
        vec![Arc::new(fallback.clone())],
        RetryPolicy {
            max_retries: 0,
            ..policy()
        },
        cooldowns.clone(),
    );
    let first = collect(resilient.stream(&ModelRequest::default()).await.unwrap()).await;
    assert_eq!(served(&first).identity.model, "nova");
    // Within the cooldown the primary is not even asked.
    let second = collect(resilient.stream(&ModelRequest::default()).await.unwrap()).await;
    assert_eq!(served(&second).attempts.len(), 1);
    assert_eq!(second[1], Ok(ModelDelta::Text("fallback two".into())));
    assert_eq!(primary.requests().len(), 1);
    // After it, the primary answers again.
    tokio::time::advance(Duration::from_secs(61)).await;
    let third = collect(resilient.stream(&ModelRequest::default()).await.unwrap()).await;
    assert_eq!(served(&third).identity.model, "gpt-5");
}

#[tokio::test(start_paused = true)]
async fn an_overflow_goes_back_to_the_run_and_a_refusal_to_the_next_model() {
    let overflow = ScriptedModel::new([ScriptedTurn::Refuse(ModelError::ContextOverflow(
        Refusal::new(None, "prompt is too long"),
    ))]);
    let fallback = ScriptedModel::new([ScriptedTurn::text("never")]).named("x", "y");
    let error = chain(&[&overflow, &fallback], &Arc::default())
        .stream(&ModelRequest::default())
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind(), FailureKind::Overflow);
    assert!(fallback.requests().is_empty());

    let refusing = ScriptedModel::new([ScriptedTurn::Refuse(status(
        400,
        Some("unsupported_parameter"),
        None,
    ))])
    .named("openai", "gpt-5.4");
    let answering = ScriptedModel::new([ScriptedTurn::text("fine")]).named("gemini", "g");
    let deltas = collect(
        chain(&[&refusing, &answering], &Arc::default())
            .stream(&ModelRequest::default())
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(served(&deltas).identity.provider, "gemini");
}

#[tokio::test(start_paused = true)]
async fn retries_stop_at_the_total_wait_and_report_every_attempt() {
    let model = ScriptedModel::new([
        ScriptedTurn::Refuse(status(503, None, Some(Duration::from_secs(20)))),
        ScriptedTurn::Refuse(status(503, None, Some(Duration::from_secs(20)))),
        ScriptedTurn::text("never"),
    ])
    .named("openai", "gpt-5");
    let error = chain(&[&model], &Arc::default())
        .stream(&ModelRequest::default())
        .await
        .err()
        .unwrap();
    // 20 s, then another 20 s would pass the 30 s budget.
    assert_eq!(model.requests().len(), 2);
    let ModelError::Exhausted { attempts, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(attempts.len(), 2);
    assert!(
        error
            .to_string()
            .ends_with("(after 2 attempts: openai:gpt-5 ×2)"),
        "{error}"
    );
    // A provider asking for more than a minute is not waited for.
    let patient = ScriptedModel::new([
        ScriptedTurn::Refuse(status(429, None, Some(Duration::from_secs(90)))),
        ScriptedTurn::text("never"),
    ]);
    let began = Instant::now();
    assert!(
        chain(&[&patient], &Arc::default())
            .stream(&ModelRequest::default())
            .await
            .is_err()
    );
    assert_eq!(began.elapsed(), Duration::ZERO);
}
