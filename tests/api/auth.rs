//! The auth matrix: every mode against no, wrong, expired and valid credentials, and two
//! principals on one thread.

use agui_lambda::testing::auth::hash_api_key;
use http_body_util::BodyExt;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::helpers::*;

const UNAUTHORIZED: &str =
    r#"{"error":{"code":"unauthorized","message":"missing or invalid credentials"}}"#;

impl TestApp {
    async fn run_as(&self, authorization: Option<&str>, body: &Value) -> Reply {
        let mut request = self
            .http
            .post(self.url("/agent"))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let www = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned());
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let body = response.text().await.unwrap();
        if status == 401 {
            assert_eq!(www.as_deref(), Some("Bearer"));
        }
        Reply {
            status,
            content_type,
            body,
        }
    }

    async fn history_as(&self, authorization: Option<&str>, thread: &str) -> u16 {
        let mut request = self.http.get(self.url(&format!("/threads/{thread}")));
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        request.send().await.unwrap().status().as_u16()
    }
}

/// Principal A's thread is invisible to principal B: run and read both answer 404, exactly as
/// for a thread that does not exist, and B's attempt changes nothing.
async fn assert_ownership(app: &TestApp, alice: &str, bob: &str) {
    let thread = new_thread();
    let body = run_input(
        &thread,
        "r1",
        json!([{"id": "u1", "role": "user", "content": "hello"}]),
    );
    assert_eq!(
        app.run_as(Some(alice), &body)
            .await
            .events()
            .last()
            .unwrap()["type"],
        "RUN_FINISHED"
    );
    assert_eq!(app.history_as(Some(alice), &thread).await, 200);
    assert_eq!(app.history_as(Some(bob), &thread).await, 404);
    assert_eq!(
        app.history_as(Some(bob), &new_thread()).await,
        404,
        "indistinguishable from a missing thread"
    );
    let intrusion = run_input(
        &thread,
        "r2",
        json!([{"id": "b1", "role": "user", "content": "hello"}]),
    );
    let reply = app.run_as(Some(bob), &intrusion).await;
    assert_eq!(reply.status, 404, "{}", reply.body);
    assert_eq!(reply.json()["error"]["code"], "thread_not_found");
    let page = app
        .http
        .get(app.url(&format!("/threads/{thread}")))
        .header("authorization", alice)
        .send()
        .await
        .unwrap();
    let history: Value = page.json().await.unwrap();
    assert_eq!(
        history["messages"].as_array().unwrap().len(),
        2,
        "bob's attempt stored nothing"
    );
}

fn refused(reply: &Reply, case: &str) {
    assert_eq!(reply.status, 401, "{case}: {}", reply.body);
    assert_eq!(
        reply.body, UNAUTHORIZED,
        "{case}: no detail that helps an attacker"
    );
}

#[tokio::test]
async fn api_keys() {
    let keys = format!(
        "alice={},bob={}",
        hash_api_key("alice-secret-key"),
        hash_api_key("bob-secret-key")
    );
    let app = spawn_app_with(&[("AUTH_MODE", "api-key"), ("API_KEYS", &keys)]).await;
    let body = run_input(
        &new_thread(),
        "r",
        json!([{"id": "u1", "role": "user", "content": "hello"}]),
    );
    refused(&app.run_as(None, &body).await, "no credentials");
    refused(
        &app.run_as(Some("Bearer wrong-key"), &body).await,
        "wrong key",
    );
    refused(
        &app.run_as(Some("alice-secret-key"), &body).await,
        "no scheme",
    );
    refused(
        &app.run_as(
            Some(&format!("Bearer {}", hash_api_key("alice-secret-key"))),
            &body,
        )
        .await,
        "the hash is not the key",
    );
    assert_eq!(
        app.history_as(None, "anything").await,
        401,
        "reads need credentials too"
    );
    assert_eq!(
        app.get("/nowhere").await.status,
        401,
        "routes are not probeable"
    );
    assert_eq!(app.model_requests().await, 0);
    assert_ownership(&app, "Bearer alice-secret-key", "Bearer bob-secret-key").await;
}

fn token(key: &str, kid: &str, claims: Value) -> String {
    let pem = std::fs::read(repo_path(&format!("tests/fixtures/jwt/{key}"))).unwrap();
    let (algorithm, encoding) = if key.starts_with("ec") {
        (Algorithm::ES256, EncodingKey::from_ec_pem(&pem).unwrap())
    } else {
        (Algorithm::RS256, EncodingKey::from_rsa_pem(&pem).unwrap())
    };
    let mut header = Header::new(algorithm);
    header.kid = Some(kid.to_owned());
    format!(
        "Bearer {}",
        jsonwebtoken::encode(&header, &claims, &encoding).unwrap()
    )
}

fn claims(sub: &str, overrides: Value) -> Value {
    let now = chrono::Utc::now().timestamp();
    let mut claims = json!({"sub": sub, "iss": "https://issuer.example", "aud": "agui", "iat": now, "nbf": now - 5, "exp": now + 600});
    for (key, value) in overrides.as_object().unwrap() {
        claims[key] = value.clone();
    }
    claims
}

async fn jwt_matrix(app: &TestApp) {
    let now = chrono::Utc::now().timestamp();
    let body = run_input(
        &new_thread(),
        "r",
        json!([{"id": "u1", "role": "user", "content": "hello"}]),
    );
    refused(&app.run_as(None, &body).await, "no token");
    refused(
        &app.run_as(Some("Bearer not.a.jwt"), &body).await,
        "garbage",
    );
    refused(
        &app.run_as(
            Some(&token(
                "other-rsa-private.pem",
                "test-rsa",
                claims("alice", json!({})),
            )),
            &body,
        )
        .await,
        "signed by an unknown key",
    );
    refused(
        &app.run_as(
            Some(&token(
                "rsa-private.pem",
                "test-rsa",
                claims("alice", json!({"exp": now - 120})),
            )),
            &body,
        )
        .await,
        "expired",
    );
    refused(
        &app.run_as(
            Some(&token(
                "rsa-private.pem",
                "test-rsa",
                claims("alice", json!({"aud": "someone-else"})),
            )),
            &body,
        )
        .await,
        "wrong audience",
    );
    refused(
        &app.run_as(
            Some(&token(
                "rsa-private.pem",
                "test-rsa",
                claims("alice", json!({"iss": "https://evil.example"})),
            )),
            &body,
        )
        .await,
        "wrong issuer",
    );
    refused(
        &app.run_as(
            Some(&token(
                "rsa-private.pem",
                "test-rsa",
                claims("alice", json!({"nbf": now + 600})),
            )),
            &body,
        )
        .await,
        "not yet valid",
    );
    refused(
        &app.run_as(
            Some(&token(
                "rsa-private.pem",
                "test-ec",
                claims("alice", json!({})),
            )),
            &body,
        )
        .await,
        "RS256 token naming the EC key",
    );
    let unsigned = format!(
        "Bearer {}.{}.",
        base64_url(r#"{"alg":"none","typ":"JWT"}"#),
        base64_url(&claims("alice", json!({})).to_string())
    );
    refused(&app.run_as(Some(&unsigned), &body).await, "alg none");
    // Within the 30 s leeway an expired token still passes.
    let lenient = token(
        "rsa-private.pem",
        "test-rsa",
        claims("carol", json!({"exp": now - 5})),
    );
    assert_eq!(app.run_as(Some(&lenient), &body).await.status, 200);

    let alice = token("rsa-private.pem", "test-rsa", claims("alice", json!({})));
    let bob = token("ec-private.pem", "test-ec", claims("bob", json!({})));
    assert_ownership(app, &alice, &bob).await;
}

fn base64_url(text: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[tokio::test]
async fn jwt_with_a_local_jwks_file() {
    let jwks = repo_path("tests/fixtures/jwt/jwks.json");
    let app = spawn_app_with(&[
        ("AUTH_MODE", "jwt"),
        ("JWT_ISSUER", "https://issuer.example"),
        ("JWT_AUDIENCE", "agui"),
        ("JWT_JWKS_FILE", jwks.to_str().unwrap()),
    ])
    .await;
    jwt_matrix(&app).await;
}

#[tokio::test]
async fn jwt_with_a_jwks_url_fetched_at_start() {
    let jwks = std::fs::read_to_string(repo_path("tests/fixtures/jwt/jwks.json")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = vec![0u8; 4096];
        let _ = socket.read(&mut request).await.unwrap();
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{jwks}",
            jwks.len()
        );
        socket.write_all(response.as_bytes()).await.unwrap();
        String::from_utf8_lossy(&request).into_owned()
    });
    let url = format!("http://127.0.0.1:{port}/.well-known/jwks.json");
    let app = spawn_app_with(&[
        ("AUTH_MODE", "jwt"),
        ("JWT_ISSUER", "https://issuer.example"),
        ("JWT_AUDIENCE", "agui"),
        ("JWT_JWKS_URL", &url),
    ])
    .await;
    assert!(
        served
            .await
            .unwrap()
            .starts_with("GET /.well-known/jwks.json"),
        "fetched once, at start"
    );
    jwt_matrix(&app).await;
}

/// `AWS_IAM` Function URLs: Lambda verified the signature and names the caller in the request
/// context; the function only reads it.
#[tokio::test]
async fn iam_callers_from_the_request_context() {
    let config = agui_lambda::testing::config::Config::from_map(
        &[("AUTH_MODE", "iam"), ("MODEL_PROVIDER", "demo")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    )
    .unwrap();
    let app = agui_lambda::testing::startup::AppBuilder::new(&config)
        .build()
        .await
        .unwrap();
    let event = |caller: Option<&str>, method: &str, path: &str, body: Option<Value>| {
        let mut event: Value = serde_json::from_str(
            &std::fs::read_to_string(repo_path("events/plain-chat.json")).unwrap(),
        )
        .unwrap();
        event["rawPath"] = json!(path);
        event["requestContext"]["http"]["method"] = json!(method);
        event["requestContext"]["http"]["path"] = json!(path);
        match body {
            Some(body) => event["body"] = json!(body.to_string()),
            None => {
                event.as_object_mut().unwrap().remove("body");
            }
        }
        if let Some(arn) = caller {
            event["requestContext"]["authorizer"] = json!({"iam": {"accessKey": "AKIA", "accountId": "123456789012", "callerId": "AIDA", "userArn": arn, "userId": "AIDA"}});
        }
        lambda_http::request::from_str(&event.to_string()).unwrap()
    };
    let answer = |request| {
        let app = &app;
        async move {
            let response = agui_lambda::testing::api::handle(app, request).await;
            let status = response.status().as_u16();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (status, String::from_utf8(body.to_vec()).unwrap())
        }
    };
    let thread = new_thread();
    let body = run_input(
        &thread,
        "r",
        json!([{"id": "u1", "role": "user", "content": "hello"}]),
    );
    let (status, text) = answer(event(None, "POST", "/agent", Some(body.clone()))).await;
    assert_eq!((status, text.as_str()), (401, UNAUTHORIZED));
    let alice = "arn:aws:iam::123456789012:user/alice";
    let bob = "arn:aws:iam::123456789012:user/bob";
    let (status, _) = answer(event(Some(alice), "POST", "/agent", Some(body))).await;
    assert_eq!(status, 200);
    assert_eq!(
        answer(event(
            Some(alice),
            "GET",
            &format!("/threads/{thread}"),
            None
        ))
        .await
        .0,
        200
    );
    assert_eq!(
        answer(event(Some(bob), "GET", &format!("/threads/{thread}"), None))
            .await
            .0,
        404
    );
    let intrusion = run_input(
        &thread,
        "r2",
        json!([{"id": "b1", "role": "user", "content": "hello"}]),
    );
    assert_eq!(
        answer(event(Some(bob), "POST", "/agent", Some(intrusion)))
            .await
            .0,
        404
    );
}

#[tokio::test]
async fn cors_preflight_and_headers_for_allowed_origins_only() {
    let app = spawn_app_with(&[("CORS_ALLOWED_ORIGINS", "https://app.example")]).await;
    // Every refusal carries CORS, the local server's early 413 included, so a browser can
    // read why it was refused.
    for (method, path, body) in [
        ("POST", "/agent", "x".repeat(300 * 1024)),
        ("POST", "/agent", "{".to_owned()),
        ("GET", "/threads/nope", String::new()),
        ("GET", "/threads/nope/runs/r/events", String::new()),
        ("POST", "/nowhere", String::new()),
    ] {
        let request = match method {
            "GET" => app.http.get(app.url(path)),
            _ => app.http.post(app.url(path)).body(body),
        };
        let refused = request
            .header("origin", "https://app.example")
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap();
        assert!(refused.status().is_client_error(), "{method} {path}");
        assert_eq!(
            refused.headers()["access-control-allow-origin"],
            "https://app.example",
            "{method} {path} {}",
            refused.status()
        );
    }
    let preflight = app
        .http
        .request(reqwest::Method::OPTIONS, app.url("/agent"))
        .header("origin", "https://app.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), 204);
    assert_eq!(
        preflight.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    assert!(
        preflight.headers()["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .contains("authorization")
    );
    let other = app
        .http
        .request(reqwest::Method::OPTIONS, app.url("/agent"))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert!(other.headers().get("access-control-allow-origin").is_none());
    let run = app
        .http
        .post(app.url("/agent"))
        .header("origin", "https://app.example")
        .header("content-type", "application/json")
        .body(
            run_input(
                &new_thread(),
                "r",
                json!([{"id": "u1", "role": "user", "content": "hello"}]),
            )
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        run.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(
        run.headers()["access-control-expose-headers"],
        "x-thread-id, x-run-id, x-trace-id, retry-after"
    );
}
