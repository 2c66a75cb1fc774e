use agui_lambda::config::Config;
use agui_lambda::protocol::verify::{parse_sse, verify_run};
use http_body_util::BodyExt;
use std::collections::HashMap;

use crate::helpers::repo_path;

async fn answer(app: &agui_lambda::api::App, file: &str) -> (u16, String) {
    let text = std::fs::read_to_string(repo_path(&format!("events/{file}"))).unwrap();
    let request =
        lambda_http::request::from_str(&text).unwrap_or_else(|err| panic!("{file}: {err}"));
    let response = agui_lambda::api::lambda::handle(app, request).await;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

/// Every event file parses as a Function URL request and gets its documented answer, with the
/// offline demo model (the files must work with no model configured).
#[tokio::test]
async fn every_event_file_gets_its_documented_status() {
    let config = Config::from_map(&HashMap::from([(
        "MODEL_PROVIDER".to_owned(),
        "demo".to_owned(),
    )]))
    .unwrap();
    let app = agui_lambda::startup::build(&config).await.unwrap();

    for file in ["history-read.json", "run-events.json", "run-cancel.json"] {
        let (status, _) = answer(&app, file).await;
        assert_eq!(status, 404, "{file}: no thread yet");
    }

    for file in [
        "plain-chat.json",
        "frontend-tool-call.json",
        "tool-result-continuation.json",
        "server-tool.json",
    ] {
        let (status, body) = answer(&app, file).await;
        assert_eq!(status, 200, "{file}: {body}");
        let events = parse_sse(&body).unwrap();
        verify_run(&events).unwrap_or_else(|err| panic!("{file}: {err}"));
        assert_eq!(
            events.last().unwrap()["type"],
            "RUN_FINISHED",
            "{file}: {body}"
        );
        if file == "server-tool.json" {
            let result = events
                .iter()
                .find(|e| e["type"] == "TOOL_CALL_RESULT")
                .expect("the demo model calls get_current_time");
            assert!(result["content"].as_str().unwrap().contains("Europe/Paris"));
        }
        if file == "frontend-tool-call.json" {
            let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
            assert!(
                kinds.contains(&"TOOL_CALL_END") && !kinds.contains(&"TOOL_CALL_RESULT"),
                "{kinds:?}"
            );
        }
    }

    let (status, body) = answer(&app, "capabilities.json").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""interrupts":true"#), "{body}");

    let (status, body) = answer(&app, "invalid-input.json").await;
    assert_eq!(status, 422);
    assert!(body.contains("runId exceeds length limit"));

    let (status, body) = answer(&app, "history-read.json").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("msg-user-1"));
    assert!(body.contains(r#""activeRunId":null"#), "{body}");

    // The plain chat's run, replayed after Last-Event-ID 2 and then cancelled once it ended.
    let (status, body) = answer(&app, "run-events.json").await;
    assert_eq!(status, 200, "{body}");
    let replay = agui_lambda::protocol::verify::parse_sse_with_ids(&body).unwrap();
    assert_eq!(replay.first().unwrap().0, Some(3), "{body}");
    assert_eq!(replay.last().unwrap().1["type"], "RUN_FINISHED");
    let (status, body) = answer(&app, "run-cancel.json").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""status":"ended""#), "{body}");
}
