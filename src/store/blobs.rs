//! Image attachments in a private S3 bucket: presigned uploads, the check of a binary part's
//! signed URL before a run, and the `s3://` paths stored in threads. Signs with `aws-sigv4` and
//! talks to S3 with reqwest (no S3 SDK); depends on nothing but `protocol` and `store::Principal`.

use crate::auth::Principal;
use crate::protocol::{Message, PartSource, UserContent, UserPart};
use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SignatureLocation,
    SigningInstructions, SigningSettings, UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;
use reqwest::Url;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::HashMap;
use std::time::{Duration, SystemTime};
use subtle::ConstantTimeEq;
use tokio::sync::Mutex;

/// The image types a client may upload, with the extension their keys end in.
const IMAGE_TYPES: [(&str, &str); 4] = [
    ("image/png", "png"),
    ("image/jpeg", "jpg"),
    ("image/gif", "gif"),
    ("image/webp", "webp"),
];
/// S3 refuses presigned URLs valid for longer than seven days.
const MAX_PRESIGN_SECS: u64 = 7 * 24 * 3600;
/// A signature dated further ahead than this was not made by a clock we share.
const CLOCK_SKEW: Duration = Duration::from_secs(15 * 60);

#[derive(Debug, Clone)]
pub struct BlobSettings {
    pub bucket: String,
    pub region: String,
    /// S3-compatible endpoint for tests/local (path-style URLs when set); `None` =
    /// `https://{bucket}.s3.{region}.amazonaws.com`.
    pub endpoint: Option<String>,
    /// The key prefix of every upload (`agent-inputs`).
    pub prefix: String,
    pub upload_expiry: Duration,
    pub read_expiry: Duration,
    pub max_bytes: u64,
}

impl BlobSettings {
    /// The defaults: prefix `agent-inputs`, uploads valid 15 minutes, reads 1 hour, 5 MiB.
    pub fn new(bucket: impl Into<String>, region: impl Into<String>) -> Self {
        Self {
            bucket: bucket.into(),
            region: region.into(),
            endpoint: None,
            prefix: "agent-inputs".to_owned(),
            upload_expiry: Duration::from_secs(15 * 60),
            read_expiry: Duration::from_secs(3600),
            max_bytes: 5 * 1024 * 1024,
        }
    }
}

pub(crate) use super::blob_types::StoredBlob;
pub use super::blob_types::{BlobError, Upload};

/// Presigned URLs and object checks for one bucket.
pub struct Blobs {
    settings: BlobSettings,
    credentials: SharedCredentialsProvider,
    http: reqwest::Client,
    /// The provider from `SdkConfig` does not cache (the SDK clients' identity cache does), and
    /// outside Lambda a lookup may be a process or an HTTP call: keep them until near expiry.
    cached: Mutex<Option<Credentials>>,
}

impl Blobs {
    pub fn new(
        settings: BlobSettings,
        credentials: SharedCredentialsProvider,
        http: reqwest::Client,
    ) -> Self {
        Self {
            settings,
            credentials,
            http,
            cached: Mutex::new(None),
        }
    }

    pub fn bucket(&self) -> &str {
        &self.settings.bucket
    }

    /// A presigned PUT for one image of `owner`: content-type and content-length are signed
    /// headers, so S3 itself refuses another type or size. `url` is a presigned GET of the same
    /// key, valid `read_expiry`.
    pub async fn presign_upload(
        &self,
        owner: &Principal,
        mime_type: &str,
        size: u64,
    ) -> Result<Upload, BlobError> {
        let extension =
            extension_of(mime_type).ok_or_else(|| BlobError::BadType(mime_type.to_owned()))?;
        let mime_type = mime_of(extension).unwrap_or(mime_type);
        if size == 0 {
            return Err(BlobError::Empty);
        }
        if size > self.settings.max_bytes {
            return Err(BlobError::TooLarge {
                max: self.settings.max_bytes,
            });
        }
        let key = format!(
            "{}/{}/{}.{extension}",
            self.settings.prefix,
            owner_hash(owner),
            uuid::Uuid::new_v4()
        );
        let length = size.to_string();
        let headers = vec![
            ("content-type".to_owned(), mime_type.to_owned()),
            ("content-length".to_owned(), length),
        ];
        let credentials = self.credentials().await?;
        let now = SystemTime::now();
        let upload_url = self.presign(
            &credentials,
            "PUT",
            &key,
            &headers,
            now,
            self.settings.upload_expiry,
        )?;
        let url = self.presign(
            &credentials,
            "GET",
            &key,
            &[],
            now,
            self.settings.read_expiry,
        )?;
        Ok(Upload {
            upload_url,
            method: "PUT",
            headers,
            url,
            key,
            expires_at_ms: epoch_ms(now + self.settings.upload_expiry),
            max_bytes: self.settings.max_bytes,
        })
    }

    /// Checks a binary part's url and returns the object it names; never fetches any other URL.
    ///
    /// In order: our scheme, host and bucket, and the exact key layout
    /// (`prefix/<first 32 hex of sha256(principal)>/<uuid>.<ext>`); the SigV4 query parameters
    /// present once each and well formed (algorithm, credential scope with our region and `s3`,
    /// date not in the future, expiry within S3's seven days, `host` the only signed header, a
    /// 64-hex signature); the key under this owner's prefix (else `ForeignOwner`); the signature
    /// itself when the URL was signed with the credentials we hold now (Lambda's role
    /// credentials rotate, so an older URL is checked structurally only: the signature is a
    /// consistency check, the access control is the owner prefix); then a signed HeadObject:
    /// the object exists, is the image type of its extension, 1..=max_bytes.
    ///
    /// An expired signature is accepted: a client may send its run a while after the upload,
    /// and what protects the object is its owner prefix and its existence (the bucket is
    /// private, only our presigned PUT for this owner can have created it), not the URL's age.
    pub async fn resolve(&self, owner: &Principal, url: &str) -> Result<StoredBlob, BlobError> {
        let parsed = Url::parse(url).map_err(|_| BlobError::NotSigned)?;
        let key = self.key_of_url(&parsed).ok_or(BlobError::NotSigned)?;
        let query = signature_query(&parsed).ok_or(BlobError::NotSigned)?;
        check_signature_shape(&query, &self.settings.region).ok_or(BlobError::NotSigned)?;
        let (hash, mime_type) = self.split_key(&key).ok_or(BlobError::NotSigned)?;
        if hash != owner_hash(owner) {
            return Err(BlobError::ForeignOwner);
        }
        let credentials = self.credentials().await?;
        if !self.signature_matches(&credentials, &key, &query)? {
            return Err(BlobError::NotSigned);
        }
        let (content_type, size) = self.head(&credentials, &key).await?;
        if content_type != mime_type {
            return Err(BlobError::BadType(content_type));
        }
        if size == 0 {
            return Err(BlobError::Empty);
        }
        if size > self.settings.max_bytes {
            return Err(BlobError::TooLarge {
                max: self.settings.max_bytes,
            });
        }
        Ok(StoredBlob {
            key,
            mime_type: mime_type.to_owned(),
            size,
        })
    }

    /// What a thread stores for an attachment: `s3://{bucket}/{key}`.
    pub fn internal_path(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.settings.bucket)
    }

    /// The key of one of our `s3://` paths; `None` for another bucket or any other URL.
    pub fn key_of_internal<'a>(&self, path: &'a str) -> Option<&'a str> {
        let key = path
            .strip_prefix("s3://")?
            .strip_prefix(self.settings.bucket.as_str())?
            .strip_prefix('/')?;
        (!key.is_empty()).then_some(key)
    }

    /// A presigned GET of `key`, valid `read_expiry` (or until the signing credentials expire,
    /// whichever is first): for history and for models that fetch images by URL.
    pub async fn presign_get(&self, key: &str) -> Result<String, BlobError> {
        let credentials = self.credentials().await?;
        self.presign(
            &credentials,
            "GET",
            key,
            &[],
            SystemTime::now(),
            self.settings.read_expiry,
        )
    }

    /// Replaces the url of every image part that is one of our `s3://` paths with a presigned
    /// GET, for models that fetch images themselves (OpenAI-compatible); other parts are left
    /// alone.
    pub async fn presign_for_model(&self, messages: &mut [Message]) -> Result<(), BlobError> {
        for message in messages {
            let Message::User {
                content: UserContent::Parts(parts),
                ..
            } = message
            else {
                continue;
            };
            for part in parts {
                let UserPart::Image(attachment) = part else {
                    continue;
                };
                let PartSource::Url { value, .. } = &mut attachment.source else {
                    continue;
                };
                if let Some(key) = self.key_of_internal(value) {
                    *value = self.presign_get(key).await?;
                }
            }
        }
        Ok(())
    }

    /// `https://{bucket}.s3.{region}.amazonaws.com`, or `{endpoint}/{bucket}` (path style).
    fn base_url(&self) -> String {
        match &self.settings.endpoint {
            Some(endpoint) => format!(
                "{}/{}",
                endpoint.trim_end_matches('/'),
                self.settings.bucket
            ),
            None => format!(
                "https://{}.s3.{}.amazonaws.com",
                self.settings.bucket, self.settings.region
            ),
        }
    }

    fn object_url(&self, key: &str) -> String {
        format!("{}/{}", self.base_url(), encode_key(key))
    }

    /// The key of a URL on our bucket, only if the URL is exactly `object_url(key)` plus a query.
    fn key_of_url(&self, url: &Url) -> Option<String> {
        let base = Url::parse(&self.base_url()).ok()?;
        let same_origin = url.scheme() == base.scheme()
            && url.host_str() == base.host_str()
            && url.port_or_known_default() == base.port_or_known_default()
            && url.username().is_empty()
            && url.password().is_none()
            && url.fragment().is_none();
        if !same_origin {
            return None;
        }
        let encoded = url
            .path()
            .strip_prefix(base.path().trim_end_matches('/'))?
            .strip_prefix('/')?;
        let key = percent_decode(encoded)?;
        // One spelling per key: no dot segments or alternative encodings to reason about.
        (!key.is_empty() && encode_key(&key) == encoded).then_some(key)
    }

    /// The owner hash and the image type of a key in our layout.
    fn split_key<'k>(&self, key: &'k str) -> Option<(&'k str, &'static str)> {
        let rest = key
            .strip_prefix(self.settings.prefix.as_str())?
            .strip_prefix('/')?;
        let (hash, file) = rest.split_once('/')?;
        let (id, extension) = file.split_once('.')?;
        let is_hash = hash.len() == 32
            && hash
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        let canonical_id = uuid::Uuid::parse_str(id)
            .ok()
            .is_some_and(|uuid| uuid.hyphenated().to_string() == id);
        let mime_type = mime_of(extension)?;
        (is_hash && canonical_id).then_some((hash, mime_type))
    }

    /// Recomputes a GET URL's signature when it was made with the credentials we hold now.
    fn signature_matches(
        &self,
        credentials: &Credentials,
        key: &str,
        query: &HashMap<String, String>,
    ) -> Result<bool, BlobError> {
        let param = |name: &str| query.get(name).map(String::as_str).unwrap_or_default();
        let access_key = param("X-Amz-Credential")
            .split('/')
            .next()
            .unwrap_or_default();
        if access_key != credentials.access_key_id()
            || query.get("X-Amz-Security-Token").map(String::as_str) != credentials.session_token()
        {
            return Ok(true);
        }
        let (Some(time), Ok(expires)) = (
            parse_amz_date(param("X-Amz-Date")),
            param("X-Amz-Expires").parse::<u64>(),
        ) else {
            return Ok(false);
        };
        let url = self.presign(
            credentials,
            "GET",
            key,
            &[],
            time,
            Duration::from_secs(expires),
        )?;
        let expected = Url::parse(&url)
            .ok()
            .and_then(|url| signature_query(&url))
            .and_then(|query| query.get("X-Amz-Signature").cloned())
            .unwrap_or_default();
        Ok(bool::from(
            expected
                .as_bytes()
                .ct_eq(param("X-Amz-Signature").as_bytes()),
        ))
    }

    /// A presigned URL of `key`, the signature in the query; `headers` are signed with it.
    fn presign(
        &self,
        credentials: &Credentials,
        method: &str,
        key: &str,
        headers: &[(String, String)],
        time: SystemTime,
        expires_in: Duration,
    ) -> Result<String, BlobError> {
        let url = self.object_url(key);
        let mut settings = s3_settings();
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(expires_in);
        // Presigned URLs never sign the body: the client sends it later.
        let signed = self.sign(
            credentials,
            settings,
            time,
            (method, &url, headers),
            SignableBody::UnsignedPayload,
        )?;
        let query = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(
                signed
                    .params()
                    .iter()
                    .map(|(name, value): &(&str, Cow<'static, str>)| (*name, value.as_ref())),
            )
            .finish();
        Ok(format!("{url}?{query}"))
    }

    /// Signs one S3 request (`method`, `url`, `headers`) in the given settings.
    fn sign(
        &self,
        credentials: &Credentials,
        settings: SigningSettings,
        time: SystemTime,
        (method, url, headers): (&str, &str, &[(String, String)]),
        body: SignableBody<'_>,
    ) -> Result<SigningInstructions, BlobError> {
        let failed =
            |error: &dyn std::fmt::Display| BlobError::Unavailable(format!("signing: {error}"));
        let identity = credentials.clone().into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.settings.region)
            .name("s3")
            .time(time)
            .settings(settings)
            .build()
            .map_err(|error| failed(&error))?
            .into();
        let headers = headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()));
        let request =
            SignableRequest::new(method, url, headers, body).map_err(|error| failed(&error))?;
        let (instructions, _) = sign(request, &params)
            .map_err(|error| failed(&error))?
            .into_parts();
        Ok(instructions)
    }

    /// A signed HeadObject: the object's content type (essence, lowercased) and size.
    async fn head(&self, credentials: &Credentials, key: &str) -> Result<(String, u64), BlobError> {
        let url = self.object_url(key);
        let mut settings = s3_settings();
        // S3 wants the payload hash as a header on header-signed requests.
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        let instructions = self.sign(
            credentials,
            settings,
            SystemTime::now(),
            ("HEAD", &url, &[]),
            SignableBody::Bytes(&[]),
        )?;
        let mut head = self.http.head(&url);
        for (name, value) in instructions.headers() {
            head = head.header(name, value);
        }
        let response = head
            .send()
            .await
            .map_err(|error| BlobError::Unavailable(format!("HeadObject: {error}")))?;
        match response.status().as_u16() {
            200 => {}
            404 => return Err(BlobError::Missing),
            // S3 answers 403 for a missing key when the role may not list the bucket.
            403 => {
                tracing::warn!(
                    bucket = %self.settings.bucket,
                    "HeadObject was refused: the object is missing and the role lacks s3:ListBucket, or it lacks s3:GetObject"
                );
                return Err(BlobError::Missing);
            }
            status => {
                return Err(BlobError::Unavailable(format!(
                    "HeadObject answered {status}"
                )));
            }
        }
        let header = |name: http::header::HeaderName| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header(http::header::CONTENT_TYPE)
            .map(|value| essence(&value))
            .unwrap_or_default();
        let size = header(http::header::CONTENT_LENGTH)
            .and_then(|value| value.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                BlobError::Unavailable("HeadObject gave no content-length".to_owned())
            })?;
        Ok((content_type, size))
    }

    async fn credentials(&self) -> Result<Credentials, BlobError> {
        let mut cached = self.cached.lock().await;
        let fresh_until = SystemTime::now() + Duration::from_secs(5 * 60);
        if let Some(credentials) = cached.as_ref()
            && credentials
                .expiry()
                .is_none_or(|expiry| expiry > fresh_until)
        {
            return Ok(credentials.clone());
        }
        let credentials = self
            .credentials
            .provide_credentials()
            .await
            .map_err(|error| BlobError::Unavailable(format!("credentials: {error}")))?;
        *cached = Some(credentials.clone());
        Ok(credentials)
    }
}

/// S3's flavour of SigV4: paths are encoded once and never normalised.
fn s3_settings() -> SigningSettings {
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    settings
}

/// The query of a URL as single-valued parameters; `None` when one repeats.
fn signature_query(url: &Url) -> Option<HashMap<String, String>> {
    let mut query = HashMap::new();
    for (name, value) in url.query_pairs() {
        if query
            .insert(name.into_owned(), value.into_owned())
            .is_some()
        {
            return None;
        }
    }
    Some(query)
}

/// The SigV4 query parameters a GET URL of ours carries, well formed.
fn check_signature_shape(query: &HashMap<String, String>, region: &str) -> Option<()> {
    let param = |name: &str| query.get(name).map(String::as_str);
    (param("X-Amz-Algorithm")? == "AWS4-HMAC-SHA256").then_some(())?;
    let date = param("X-Amz-Date")?;
    let time = parse_amz_date(date)?;
    (time <= SystemTime::now() + CLOCK_SKEW).then_some(())?;
    let scope: Vec<&str> = param("X-Amz-Credential")?.split('/').collect();
    let [access_key, day, scope_region, service, terminator] = scope.as_slice() else {
        return None;
    };
    let well_scoped = !access_key.is_empty()
        && date.get(..8) == Some(*day)
        && *scope_region == region
        && *service == "s3"
        && *terminator == "aws4_request";
    well_scoped.then_some(())?;
    let expires = param("X-Amz-Expires")?.parse::<u64>().ok()?;
    (1..=MAX_PRESIGN_SECS).contains(&expires).then_some(())?;
    // Our GET URLs sign the host only: a URL that asks for more headers is not ours.
    (param("X-Amz-SignedHeaders")? == "host").then_some(())?;
    let signature = param("X-Amz-Signature")?;
    let is_hex = signature.len() == 64
        && signature
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    is_hex.then_some(())
}

/// `20240102T030405Z` as a time.
fn parse_amz_date(date: &str) -> Option<SystemTime> {
    let time = chrono::NaiveDateTime::parse_from_str(date, "%Y%m%dT%H%M%SZ").ok()?;
    let secs = u64::try_from(time.and_utc().timestamp()).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// The first 32 hex digits of sha256(principal): keys say whose they are without naming them.
fn owner_hash(owner: &Principal) -> String {
    Sha256::digest(owner.as_str().as_bytes())
        .iter()
        .take(16)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn essence(mime_type: &str) -> String {
    mime_type
        .split(';')
        .next()
        .unwrap_or(mime_type)
        .trim()
        .to_ascii_lowercase()
}

fn extension_of(mime_type: &str) -> Option<&'static str> {
    let essence = essence(mime_type);
    IMAGE_TYPES
        .iter()
        .find(|(mime, _)| *mime == essence)
        .map(|(_, extension)| *extension)
}

fn mime_of(extension: &str) -> Option<&'static str> {
    IMAGE_TYPES
        .iter()
        .find(|(_, known)| *known == extension)
        .map(|(mime, _)| *mime)
}

/// A key as S3 wants it in a path: everything but unreserved characters and `/` escaped.
fn encode_key(key: &str) -> String {
    let mut encoded = String::with_capacity(key.len());
    for byte in key.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~' | b'/') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// A percent-encoded path segment, decoded; `None` when it is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .ok()
        .map(std::borrow::Cow::into_owned)
}

fn epoch_ms(time: SystemTime) -> i64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blobs() -> Blobs {
        let credentials = Credentials::new("AKIDTEST", "secret", None, None, "test");
        Blobs::new(
            BlobSettings::new("inputs", "eu-west-1"),
            SharedCredentialsProvider::new(credentials),
            reqwest::Client::new(),
        )
    }

    #[test]
    fn internal_paths_round_trip_only_for_our_bucket() {
        let blobs = blobs();
        let path = blobs.internal_path("agent-inputs/a/b.png");
        assert_eq!(path, "s3://inputs/agent-inputs/a/b.png");
        assert_eq!(blobs.key_of_internal(&path), Some("agent-inputs/a/b.png"));
        assert_eq!(
            blobs.key_of_internal("s3://inputs-2/agent-inputs/a.png"),
            None
        );
        assert_eq!(blobs.key_of_internal("s3://inputs/"), None);
        assert_eq!(
            blobs.key_of_internal("https://inputs/agent-inputs/a.png"),
            None
        );
    }

    #[tokio::test]
    async fn a_presigned_get_passes_the_structural_checks_and_its_own_signature() {
        let blobs = blobs();
        let owner = Principal::new("alice");
        let key = format!(
            "agent-inputs/{}/{}.png",
            owner_hash(&owner),
            uuid::Uuid::new_v4()
        );
        let url = blobs.presign_get(&key).await.unwrap();
        assert!(url.starts_with(&format!("https://inputs.s3.eu-west-1.amazonaws.com/{key}?")));
        let parsed = Url::parse(&url).unwrap();
        assert_eq!(blobs.key_of_url(&parsed), Some(key.clone()));
        let query = signature_query(&parsed).unwrap();
        assert_eq!(check_signature_shape(&query, "eu-west-1"), Some(()));
        assert_eq!(check_signature_shape(&query, "us-east-1"), None);
        let credentials = blobs.credentials().await.unwrap();
        assert!(blobs.signature_matches(&credentials, &key, &query).unwrap());
        let other = format!(
            "agent-inputs/{}/{}.png",
            owner_hash(&owner),
            uuid::Uuid::new_v4()
        );
        assert!(
            !blobs
                .signature_matches(&credentials, &other, &query)
                .unwrap()
        );
    }

    #[test]
    fn keys_outside_the_layout_are_refused() {
        let blobs = blobs();
        let hash = owner_hash(&Principal::new("alice"));
        let id = uuid::Uuid::new_v4();
        assert!(
            blobs
                .split_key(&format!("agent-inputs/{hash}/{id}.png"))
                .is_some()
        );
        assert!(
            blobs
                .split_key(&format!("agent-inputs/{hash}/{id}.tiff"))
                .is_none()
        );
        assert!(blobs.split_key(&format!("other/{hash}/{id}.png")).is_none());
        assert!(
            blobs
                .split_key(&format!("agent-inputs/{hash}/x/{id}.png"))
                .is_none()
        );
        assert!(
            blobs
                .split_key(&format!("agent-inputs/{hash}/{}.png", id.simple()))
                .is_none()
        );
    }
}
