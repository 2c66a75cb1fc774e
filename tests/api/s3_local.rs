//! moto's server mode (PyPI `moto[server]`, in .venv by scripts/install-test-tools.sh) as an
//! S3-compatible server for the tests: one per test binary, on a free loopback port, stopped by a
//! watchdog when the tests exit. `AGUI_TEST_S3_ENDPOINT` points the tests at a running one instead.

use agui_lambda::testing::store::blobs::{BlobSettings, Blobs};
use aws_credential_types::Credentials;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use std::time::{Duration, SystemTime};
use tokio::sync::OnceCell;

use crate::helpers::repo_path;

pub(crate) const REGION: &str = "us-east-1";

static ENDPOINT: OnceCell<String> = OnceCell::const_new();

pub(crate) fn credentials() -> Credentials {
    Credentials::new("test", "test", None, None, "test")
}

pub(crate) async fn endpoint() -> &'static str {
    ENDPOINT
        .get_or_init(|| async {
            if let Ok(endpoint) = std::env::var("AGUI_TEST_S3_ENDPOINT") {
                return endpoint;
            }
            start().await
        })
        .await
}

/// Starts a moto server of its own and returns its endpoint once it answers.
async fn start() -> String {
    let moto = repo_path(".venv/bin/moto_server");
    assert!(
        moto.exists(),
        "moto is not installed at {moto:?}: run scripts/install-test-tools.sh"
    );
    let port = crate::helpers::free_port();
    crate::helpers::spawn_watched(&format!(
        "'{moto}' -H 127.0.0.1 -p {port}",
        moto = moto.display()
    ));
    let endpoint = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    for _ in 0..300 {
        // ListBuckets answers once the server is up.
        if http
            .get(&endpoint)
            .send()
            .await
            .is_ok_and(|response| response.status().is_success())
        {
            return endpoint;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("moto did not start on port {port}");
}

/// A fresh bucket (CreateBucket as a signed PUT) and `Blobs` on it with the given limit.
pub(crate) async fn new_blobs(max_bytes: u64) -> Blobs {
    let endpoint = endpoint().await;
    let bucket = format!("inputs-{}", uuid::Uuid::new_v4().simple());
    create_bucket(endpoint, &bucket).await;
    let mut settings = BlobSettings::new(bucket, REGION);
    settings.endpoint = Some(endpoint.to_owned());
    settings.max_bytes = max_bytes;
    Blobs::new(
        settings,
        SharedCredentialsProvider::new(credentials()),
        reqwest::Client::new(),
    )
}

async fn create_bucket(endpoint: &str, bucket: &str) {
    let url = format!("{endpoint}/{bucket}");
    let identity = credentials().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(REGION)
        .name("s3")
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .unwrap()
        .into();
    let request =
        SignableRequest::new("PUT", &url, std::iter::empty(), SignableBody::Bytes(&[])).unwrap();
    let (instructions, _) = sign(request, &params).unwrap().into_parts();
    let mut put = reqwest::Client::new().put(&url);
    for (name, value) in instructions.headers() {
        put = put.header(name, value);
    }
    let response = put.send().await.unwrap();
    assert!(
        response.status().is_success(),
        "CreateBucket answered {}",
        response.status()
    );
}
