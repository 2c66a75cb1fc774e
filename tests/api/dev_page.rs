//! The dev chat page: `GET /` serves it (with its content type and a strict policy) unless
//! `DEV_UI=false`, which leaves `GET /` the 405 it was, now saying how to turn the page on.

use crate::helpers::{spawn_app, spawn_app_with};

#[tokio::test]
async fn get_root_serves_the_dev_page_with_a_strict_policy() {
    let app = spawn_app().await;

    let page = app.http.get(app.url("/")).send().await.unwrap();
    let script = app.http.get(app.url("/dev/app.js")).send().await.unwrap();

    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let policy = headers["content-security-policy"].to_str().unwrap();
    assert!(
        policy.starts_with("default-src 'none'; script-src 'self';"),
        "{policy}"
    );
    assert!(!policy.contains("unsafe"), "{policy}");
    assert_eq!(headers["cache-control"], "no-cache");
    assert!(page.text().await.unwrap().contains("dev/app.js"));
    assert_eq!(script.status(), 200);
    assert_eq!(
        script.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    // The page's own API is untouched: POST / still runs the agent, GET /agent is still 405.
    assert_eq!(app.get("/agent").await.status, 405);
}

#[tokio::test]
async fn dev_ui_false_turns_the_page_off() {
    let app = spawn_app_with(&[("DEV_UI", "false")]).await;

    let page = app.get("/").await;
    let script = app.get("/dev/app.js").await;

    assert_eq!(page.status, 405, "{}", page.body);
    assert_eq!(page.json()["error"]["code"], "method_not_allowed");
    assert_eq!(script.status, 404, "{}", script.body);
    // As `cargo lambda watch` serves it: the 405 says how to get the page.
    let watched = app.get("/lambda-url/agui-lambda/").await;
    assert_eq!(watched.status, 405, "{}", watched.body);
    let message = watched.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("DEV_UI=true"), "{message}");
}

#[tokio::test]
async fn the_page_needs_no_credentials_but_the_api_still_does() {
    let keys = format!("alice={}", "0".repeat(64));
    let app = spawn_app_with(&[("AUTH_MODE", "api-key"), ("API_KEYS", &keys)]).await;

    assert_eq!(app.get("/").await.status, 200);
    assert_eq!(app.get("/threads").await.status, 401);
}
