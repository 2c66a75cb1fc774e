//! The attachment store's plain types (an upload, a stored object, why one was refused), in
//! every build, so the HTTP layer is the same whether or not the S3 store (`blobs`, `aws`
//! feature) is built.

/// What a client needs to upload one image, and the URL it then puts in a binary part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upload {
    pub upload_url: String,
    pub method: &'static str,
    /// Headers the client must send with exactly these values: they are signed.
    pub headers: Vec<(String, String)>,
    /// A presigned GET of the object: what goes into a binary part's `url`.
    pub url: String,
    pub key: String,
    pub expires_at_ms: i64,
    pub max_bytes: u64,
}

/// An uploaded object, as S3 reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlob {
    pub key: String,
    pub mime_type: String,
    pub size: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// Not a URL this server issued: another host, another bucket or layout, or no valid
    /// signature.
    #[error("the url is not a signed attachment url issued by this server")]
    NotSigned,
    #[error("the attachment belongs to someone else")]
    ForeignOwner,
    #[error("the attachment has not been uploaded")]
    Missing,
    #[error("attachments must be PNG, JPEG, GIF or WebP images, not {0}")]
    BadType(String),
    #[error("attachments are limited to {max} bytes")]
    TooLarge { max: u64 },
    #[error("the attachment is empty")]
    Empty,
    #[error("the attachment store is unavailable: {0}")]
    Unavailable(String),
}

/// Builds without the `aws` feature have no attachment store: this stands in for
/// `blobs::Blobs` so the HTTP layer compiles unchanged, and can never be made.
#[cfg(not(feature = "aws"))]
pub enum Blobs {}

#[cfg(not(feature = "aws"))]
impl Blobs {
    pub fn bucket(&self) -> &str {
        match *self {}
    }

    pub(crate) async fn presign_upload(
        &self,
        _owner: &crate::auth::Principal,
        _mime_type: &str,
        _size: u64,
    ) -> Result<Upload, BlobError> {
        match *self {}
    }

    pub(crate) async fn resolve(
        &self,
        _owner: &crate::auth::Principal,
        _url: &str,
    ) -> Result<StoredBlob, BlobError> {
        match *self {}
    }

    pub fn internal_path(&self, _key: &str) -> String {
        match *self {}
    }

    pub fn key_of_internal<'a>(&self, _path: &'a str) -> Option<&'a str> {
        match *self {}
    }

    pub async fn presign_get(&self, _key: &str) -> Result<String, BlobError> {
        match *self {}
    }

    pub async fn presign_for_model(
        &self,
        _messages: &mut [crate::protocol::Message],
    ) -> Result<(), BlobError> {
        match *self {}
    }
}
