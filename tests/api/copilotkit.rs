//! CopilotKit's routes as a client meets them: `/info` that tells the truth and reads no store,
//! the same authentication, owner checks, CORS and error door as every route, the thread routes
//! of `useThreads` and the inspector, and the single-route envelope.

use super::copilotkit_runs::{POEM, input, post, run_events, user};
use super::helpers::*;
use agui_lambda::testing::auth::hash_api_key;
use serde_json::{Value, json};

const ALICE: &str = "alice-copilotkit-key";
const BOB: &str = "bob-copilotkit-key";

fn keys() -> String {
    format!("alice={},bob={}", hash_api_key(ALICE), hash_api_key(BOB))
}

/// A thread of `key`'s made by one run through `/copilotkit/agent/default/run`.
async fn thread_of(app: &TestApp, key: &str, text: &str) -> String {
    let thread = new_thread();
    let answer = call(
        app,
        key,
        "POST",
        "/copilotkit/agent/default/run",
        Some(input(&thread, "r1", json!([user("u1", text)]))),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    thread
}

#[tokio::test]
async fn info_says_a2ui_only_when_an_agent_paints_and_names_those_that_do() {
    let off = spawn_app_with(&[("A2UI", "off")]).await;
    let info = off.get("/copilotkit/info").await.json();
    assert_eq!(info["a2ui"], json!({"enabled": false}));
    assert_eq!(info["a2uiEnabled"], false);
    let profiles = r#"{"forms": {"a2ui": "on"}, "plain": {}}"#;
    let one = spawn_app_with(&[("A2UI", "off"), ("AGENT_PROFILES", profiles)]).await;
    let info = one.get("/copilotkit/info").await.json();
    assert_eq!(info["a2ui"], json!({"enabled": true, "agents": ["forms"]}));
    assert_eq!(info["a2uiEnabled"], true);
}

#[tokio::test]
async fn info_lists_the_agents_and_every_flag() {
    let profiles =
        r#"{"researcher": {"description": "Finds facts.", "systemPrompt": "Research."}}"#;
    let app = spawn_app_with(&[("AGENT_PROFILES", profiles)]).await;
    let info = app.get("/copilotkit/info").await;
    assert_eq!(info.status, 200, "{}", info.body);
    let info = info.json();
    assert_eq!(info["mode"], "sse");
    let agents = info["agents"].as_object().unwrap();
    assert_eq!(
        agents.keys().collect::<Vec<_>>(),
        ["default", "researcher"],
        "the default agent and each profile"
    );
    assert_eq!(info["agents"]["default"]["name"], "default");
    assert_eq!(
        info["agents"]["researcher"]["capabilities"]["tools"]["supported"],
        true
    );
    for flag in ["list", "inspect", "mutations", "realtimeMetadata"] {
        assert!(
            info["threadEndpoints"][flag].is_boolean(),
            "threadEndpoints.{flag} is set"
        );
    }
    assert_eq!(info["threadEndpoints"]["realtimeMetadata"], false);
    // A2UI is `auto` unless set: CopilotKit's page, told so, declares it paints and gets the tool.
    assert_eq!(info["a2ui"], json!({"enabled": true}));
    assert_eq!(info["a2uiEnabled"], true);
    assert_eq!(info["openGenerativeUIEnabled"], false);
    assert_eq!(info["audioFileTranscriptionEnabled"], false);
    for never in ["intelligence", "licenseStatus", "runtimeEntitlements"] {
        assert!(info.get(never).is_none(), "{never}");
    }
    // The same for the capabilities route's agent.
    let capabilities = app.get("/capabilities").await.json();
    assert_eq!(info["agents"]["default"]["capabilities"], capabilities);
    // An unknown agent is a 404 in our shape.
    let reply = post(
        &app,
        "/copilotkit/agent/nobody/connect",
        &input(&new_thread(), "c", json!([])),
    )
    .await;
    assert_eq!(reply.status, 404);
    assert_eq!(reply.json()["error"]["code"], "agent_not_found");
}

#[tokio::test]
async fn every_route_authenticates_and_sees_only_the_callers_threads() {
    let app = spawn_app_with(&[("AUTH_MODE", "api-key"), ("API_KEYS", &keys())]).await;
    let info = app.get("/copilotkit/info").await;
    assert_eq!(info.status, 401, "{}", info.body);
    assert_eq!(
        call(&app, ALICE, "GET", "/copilotkit/info", None)
            .await
            .status,
        200
    );
    let alices = thread_of(&app, ALICE, POEM).await;

    // Bob cannot read, restore, rename, archive, stop or delete Alice's thread.
    let replay = call(
        &app,
        BOB,
        "POST",
        "/copilotkit/agent/default/connect",
        Some(input(&alices, "c", json!([]))),
    )
    .await;
    assert_eq!(replay.status, 200);
    assert_eq!(replay.body, "", "nothing to restore: not a 404 either");
    for (method, path, body) in [
        (
            "GET",
            format!("/copilotkit/threads/{alices}/messages"),
            None,
        ),
        ("GET", format!("/copilotkit/threads/{alices}/state"), None),
        (
            "PATCH",
            format!("/copilotkit/threads/{alices}"),
            Some(json!({"name": "mine now"})),
        ),
        (
            "POST",
            format!("/copilotkit/agent/default/stop/{alices}"),
            None,
        ),
    ] {
        let answer = call(&app, BOB, method, &path, body).await;
        assert_eq!(answer.status, 404, "{method} {path}: {}", answer.body);
        assert_eq!(answer.error_code(), "thread_not_found");
    }
    let deleted = call(
        &app,
        BOB,
        "DELETE",
        &format!("/copilotkit/threads/{alices}"),
        None,
    )
    .await;
    assert_eq!(deleted.status, 404, "{}", deleted.body);
    // Alice still has it all.
    let messages = call(
        &app,
        ALICE,
        "GET",
        &format!("/copilotkit/threads/{alices}/messages"),
        None,
    )
    .await;
    assert_eq!(messages.status, 200);
    assert_eq!(messages.json()["messages"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_browser_on_another_origin_passes_the_preflight_with_its_authorization() {
    let app = spawn_app_with(&[("CORS_ALLOWED_ORIGINS", "http://page.example")]).await;
    for (method, path) in [
        ("GET", "/copilotkit/info"),
        ("POST", "/copilotkit/agent/default/run"),
        ("PATCH", "/copilotkit/threads/t1"),
        ("DELETE", "/copilotkit/threads/t1"),
    ] {
        let preflight = app
            .http
            .request(reqwest::Method::OPTIONS, app.url(path))
            .header("origin", "http://page.example")
            .header("access-control-request-method", method)
            .header(
                "access-control-request-headers",
                "authorization,content-type",
            )
            .send()
            .await
            .unwrap();
        assert_eq!(preflight.status(), 204, "{method} {path}");
        let header = |name: &str| {
            preflight
                .headers()
                .get(name)
                .map(|value| value.to_str().unwrap().to_owned())
                .unwrap_or_default()
        };
        assert!(
            header("access-control-allow-headers")
                .split(", ")
                .any(|name| name == "authorization"),
            "Authorization is named, as a `*` never covers it"
        );
        assert!(header("access-control-allow-methods").contains(method));
    }
    let info = app
        .http
        .get(app.url("/copilotkit/info"))
        .header("origin", "http://page.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        info.headers()["access-control-allow-origin"],
        "http://page.example"
    );
    let other = app
        .http
        .request(reqwest::Method::OPTIONS, app.url("/copilotkit/info"))
        .header("origin", "http://elsewhere.example")
        .header("access-control-request-method", "GET")
        .send()
        .await
        .unwrap();
    assert!(other.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
async fn refusals_are_json_with_a_status_and_change_nothing() {
    let app = spawn_app().await;
    let thread = thread_of(&app, "", POEM).await;
    let cases: Vec<(&str, String, Option<&str>, u16, &str)> = vec![
        (
            "POST",
            "/copilotkit/agent/default/run".into(),
            Some("{not json"),
            400,
            "invalid_json",
        ),
        (
            "POST",
            "/copilotkit/agent/default/connect".into(),
            Some(r#"{"threadId": 5}"#),
            422,
            "invalid_request",
        ),
        (
            "GET",
            "/copilotkit/agent/default/run".into(),
            None,
            405,
            "method_not_allowed",
        ),
        (
            "POST",
            format!("/copilotkit/agent/default/stop/{thread}"),
            Some(r#"{"runID": "r1"}"#),
            422,
            "invalid_request",
        ),
        (
            "PATCH",
            format!("/copilotkit/threads/{thread}"),
            Some(r#"{"agentId": "default"}"#),
            422,
            "invalid_request",
        ),
        (
            "PATCH",
            format!("/copilotkit/threads/{thread}"),
            Some(r#"{"name": ""}"#),
            422,
            "invalid_request",
        ),
        (
            "POST",
            format!("/copilotkit/threads/{thread}/archive"),
            Some(r#"{"hard": true}"#),
            422,
            "invalid_request",
        ),
        (
            "GET",
            "/copilotkit/threads?limit=0".into(),
            None,
            400,
            "invalid_query",
        ),
        (
            "GET",
            "/copilotkit/threads?includeArchived=maybe".into(),
            None,
            400,
            "invalid_query",
        ),
        (
            "GET",
            "/copilotkit/threads/nope/messages".into(),
            None,
            404,
            "thread_not_found",
        ),
        (
            "GET",
            "/copilotkit/nothing-here".into(),
            None,
            404,
            "not_found",
        ),
        (
            "POST",
            "/copilotkit".into(),
            Some(r#"{"method": "memories/list"}"#),
            404,
            "not_found",
        ),
    ];
    for (method, path, body, status, code) in cases {
        let answer = call_raw(&app, "", method, &path, body.map(str::to_owned)).await;
        assert_eq!(answer.status, status, "{method} {path}: {}", answer.body);
        assert_eq!(answer.error_code(), code, "{method} {path}");
    }
    let form = app
        .post_raw(
            "/copilotkit/agent/default/run",
            "application/x-www-form-urlencoded",
            "a=b",
        )
        .await;
    assert_eq!(form.status, 415);
    // Nothing changed: the thread still holds its one exchange, under its own title.
    let messages = app
        .get(&format!("/copilotkit/threads/{thread}/messages"))
        .await;
    assert_eq!(messages.json()["messages"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn the_inspector_reads_messages_and_state() {
    let app = spawn_app().await;
    let thread = new_thread();
    let mut body = input(&thread, "r1", json!([user("u1", POEM)]));
    body["state"] = json!({"colour": "yellow"});
    run_events(&post(&app, "/copilotkit/agent/default/run", &body).await);
    let messages = app
        .get(&format!("/copilotkit/threads/{thread}/messages"))
        .await
        .json();
    let messages = messages["messages"].as_array().unwrap();
    assert_eq!(
        messages[0],
        json!({"id": "u1", "role": "user", "content": POEM})
    );
    assert_eq!(messages[1]["role"], "assistant");
    assert!(
        messages[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("Here is")
    );
    let state = app
        .get(&format!("/copilotkit/threads/{thread}/state"))
        .await
        .json();
    assert_eq!(state, json!({"state": {"colour": "yellow"}}));
}

/// A single-route envelope: `POST /copilotkit`.
async fn envelope(app: &TestApp, call: Value) -> Reply {
    post(app, "/copilotkit", &call).await
}

#[tokio::test]
async fn the_single_route_envelope_answers_as_the_rest_routes() {
    let app = spawn_app().await;
    let info = envelope(&app, json!({"method": "info"})).await;
    assert_eq!(info.status, 200, "{}", info.body);
    let info = info.json();
    assert_eq!(info["agents"]["default"]["name"], "default");
    assert_eq!(info["singleRoute"]["resourceOperations"], true);

    let thread = new_thread();
    let run = envelope(
        &app,
        json!({"method": "agent/run", "params": {"agentId": "default"},
               "body": input(&thread, "r1", json!([user("u1", POEM)]))}),
    )
    .await;
    let events = run_events(&run);
    assert!(text_of(&events).starts_with("Here is a short poem"));

    let replay = envelope(
        &app,
        json!({"method": "agent/connect", "params": {"agentId": "default"},
               "body": input(&thread, "c1", json!([]))}),
    )
    .await;
    assert_eq!(
        types(&run_events(&replay)),
        [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
            "RUN_FINISHED"
        ]
    );
    let stop = envelope(
        &app,
        json!({"method": "agent/stop", "params": {"agentId": "default", "threadId": thread}}),
    )
    .await;
    assert_eq!(stop.status, 200, "{}", stop.body);
    assert_eq!(stop.json()["stopped"], false);

    let messages = envelope(
        &app,
        json!({"method": "resource/request",
               "params": {"path": format!("/threads/{thread}/messages"), "httpMethod": "GET"}}),
    )
    .await;
    assert_eq!(messages.status, 200, "{}", messages.body);
    assert_eq!(messages.json()["messages"].as_array().unwrap().len(), 2);
    let renamed = envelope(
        &app,
        json!({"method": "resource/request",
               "params": {"path": format!("/threads/{thread}"), "httpMethod": "PATCH"},
               "body": {"agentId": "default", "name": "Poems"}}),
    )
    .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    assert_eq!(
        app.get(&format!("/threads/{thread}")).await.json()["title"],
        "Poems"
    );
    // The envelope reaches only CopilotKit's own thread routes.
    let elsewhere = envelope(
        &app,
        json!({"method": "resource/request",
               "params": {"path": "/threads/../info", "httpMethod": "GET"}}),
    )
    .await;
    assert_eq!(elsewhere.status, 404, "{}", elsewhere.body);
}

/// `GET /copilotkit/threads…` as `key`: the page's ids and archived flags, and its next cursor.
async fn shelf(app: &TestApp, key: &str, query: &str) -> (Vec<(String, bool)>, Value) {
    let answer = call(
        app,
        key,
        "GET",
        &format!("/copilotkit/threads?{query}"),
        None,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let page = answer.json();
    let threads = page["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|record| {
            assert_eq!(record["agentId"], "default");
            assert_eq!(record["organizationId"], "");
            (
                record["id"].as_str().unwrap().to_owned(),
                record["archived"].as_bool().unwrap(),
            )
        })
        .collect();
    (threads, page["nextCursor"].clone())
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
async fn the_thread_list_pages_newest_first_and_hides_archived_threads() {
    let app = spawn_app_with(&[("AUTH_MODE", "api-key"), ("API_KEYS", &keys())]).await;
    let mut made = Vec::new();
    for index in 0..5 {
        made.push(thread_of(&app, ALICE, &format!("{POEM} number {index}")).await);
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    let bobs = thread_of(&app, BOB, POEM).await;
    made.reverse();

    // Two at a time, newest first, each with its title.
    let (first, cursor) = shelf(&app, ALICE, "agentId=default&limit=2").await;
    assert_eq!(first, [(made[0].clone(), false), (made[1].clone(), false)]);
    let cursor = cursor.as_str().unwrap().to_owned();
    let (second, _) = shelf(
        &app,
        ALICE,
        &format!("agentId=default&limit=2&cursor={}", urlencode(&cursor)),
    )
    .await;
    assert_eq!(second, [(made[2].clone(), false), (made[3].clone(), false)]);
    let record = call(
        &app,
        ALICE,
        "GET",
        "/copilotkit/threads?agentId=default&limit=1",
        None,
    )
    .await
    .json();
    assert_eq!(record["threads"][0]["name"], format!("{POEM} number 4"));
    let (all, next) = shelf(&app, ALICE, "agentId=default").await;
    assert_eq!(all.len(), 5, "Bob's thread is not Alice's");
    assert_eq!(next, Value::Null);
    assert!(!all.iter().any(|(id, _)| *id == bobs));

    // Archived: hidden, unless asked for; unarchived: back in its place.
    let archived = call(
        &app,
        ALICE,
        "POST",
        &format!("/copilotkit/threads/{}/archive", made[1]),
        Some(json!({"agentId": "default"})),
    )
    .await;
    assert_eq!(archived.status, 200, "{}", archived.body);
    let (visible, _) = shelf(&app, ALICE, "agentId=default").await;
    assert!(!visible.iter().any(|(id, _)| *id == made[1]));
    assert_eq!(visible.len(), 4);
    let (with_archived, _) = shelf(&app, ALICE, "agentId=default&includeArchived=true").await;
    assert_eq!(
        with_archived[1],
        (made[1].clone(), true),
        "archiving moves nothing"
    );
    let back = call(
        &app,
        ALICE,
        "PATCH",
        &format!("/copilotkit/threads/{}", made[1]),
        Some(json!({"agentId": "default", "archived": false})),
    )
    .await;
    assert_eq!(back.status, 200, "{}", back.body);
    assert_eq!(
        shelf(&app, ALICE, "agentId=default").await.0[1],
        (made[1].clone(), false)
    );
    // Bob archives nothing of Alice's.
    let refused = call(
        &app,
        BOB,
        "POST",
        &format!("/copilotkit/threads/{}/archive", made[1]),
        None,
    )
    .await;
    assert_eq!(refused.status, 404);

    // Renamed and deleted as CopilotKit asks.
    let renamed = call(
        &app,
        ALICE,
        "PATCH",
        &format!("/copilotkit/threads/{}", made[0]),
        Some(json!({"agentId": "default", "name": "Poems, renamed"})),
    )
    .await;
    assert_eq!(renamed.status, 200);
    let deleted = call(
        &app,
        ALICE,
        "DELETE",
        &format!("/copilotkit/threads/{}", made[2]),
        Some(json!({"agentId": "default"})),
    )
    .await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    let page = call(
        &app,
        ALICE,
        "GET",
        "/copilotkit/threads?agentId=default",
        None,
    )
    .await
    .json();
    assert_eq!(page["threads"][0]["name"], "Poems, renamed");
    assert_eq!(page["threads"].as_array().unwrap().len(), 4);
    // Our own list keeps its shape: every thread, archived or not, with `title`.
    let ours = call(&app, ALICE, "GET", "/threads", None).await.json();
    assert_eq!(ours["threads"][0]["title"], "Poems, renamed");
    assert!(ours["threads"][0].get("archived").is_none());
}

fn urlencode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
