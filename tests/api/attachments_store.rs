//! Image attachments on an S3-compatible server (moto, `s3_local`): presigned uploads, the
//! checks of a binary part's URL, presigned reads. moto accepts any signature (it does not
//! verify SigV4 unless IAM is emulated), so what S3 enforces through the signed PUT headers is
//! not tested here; `Blobs::resolve` checks the URL's shape and its own signature itself, and the
//! object's type and size through HeadObject, and that is what these tests rely on.

use crate::s3_local::new_blobs;
use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::protocol::{
    Attachment, Message, MessageId, PartSource, UserContent, UserPart,
};
use agui_lambda::testing::store::blobs::{BlobError, Blobs, Upload};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n not really a picture";
const MIB: u64 = 1024 * 1024;

/// PUTs `bytes` to the upload URL with the headers it asks for, as a client would.
async fn upload(upload: &Upload, content_type: &str, bytes: &[u8]) {
    let mut put = reqwest::Client::new()
        .put(&upload.upload_url)
        .body(bytes.to_vec());
    for (name, _) in &upload.headers {
        if name == "content-type" {
            put = put.header(name, content_type);
        } else {
            // reqwest sets content-length from the body: a second header would be a bad request.
            assert_eq!(name, "content-length");
        }
    }
    let response = put.send().await.unwrap();
    assert!(
        response.status().is_success(),
        "PUT answered {}",
        response.status()
    );
}

async fn uploaded(blobs: &Blobs, owner: &Principal) -> Upload {
    let presigned = blobs
        .presign_upload(owner, "image/png", PNG.len() as u64)
        .await
        .unwrap();
    upload(&presigned, "image/png", PNG).await;
    presigned
}

#[tokio::test]
async fn an_uploaded_image_resolves_for_its_owner_and_reads_back_through_presigned_gets() {
    let blobs = new_blobs(5 * MIB).await;
    let alice = Principal::new("alice");

    let presigned = blobs
        .presign_upload(&alice, "image/png", PNG.len() as u64)
        .await
        .unwrap();
    upload(&presigned, "image/png", PNG).await;
    let stored = blobs.resolve(&alice, &presigned.url).await.unwrap();

    assert_eq!(presigned.method, "PUT");
    assert_eq!(
        presigned.headers,
        vec![
            ("content-type".to_owned(), "image/png".to_owned()),
            ("content-length".to_owned(), PNG.len().to_string()),
        ]
    );
    assert!(
        presigned
            .upload_url
            .contains("X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost")
    );
    assert!(presigned.key.starts_with("agent-inputs/") && presigned.key.ends_with(".png"));
    assert!(presigned.expires_at_ms > chrono::Utc::now().timestamp_millis());
    assert_eq!(presigned.max_bytes, 5 * MIB);
    assert_eq!(stored.key, presigned.key);
    assert_eq!(stored.mime_type, "image/png");
    assert_eq!(stored.size, PNG.len() as u64);
    let path = blobs.internal_path(&stored.key);
    assert_eq!(path, format!("s3://{}/{}", blobs.bucket(), stored.key));
    assert_eq!(blobs.key_of_internal(&path), Some(stored.key.as_str()));
    for url in [
        presigned.url.clone(),
        blobs.presign_get(&stored.key).await.unwrap(),
    ] {
        let body = reqwest::get(&url).await.unwrap().bytes().await.unwrap();
        assert_eq!(&body[..], PNG);
    }
}

#[tokio::test]
async fn one_owners_url_resolved_as_another_is_foreign() {
    let blobs = new_blobs(5 * MIB).await;
    let presigned = uploaded(&blobs, &Principal::new("alice")).await;

    let resolved = blobs.resolve(&Principal::new("bob"), &presigned.url).await;

    assert!(
        matches!(resolved, Err(BlobError::ForeignOwner)),
        "{resolved:?}"
    );
}

#[tokio::test]
async fn urls_this_server_did_not_sign_are_refused_before_any_request() {
    let blobs = new_blobs(5 * MIB).await;
    let alice = Principal::new("alice");
    let presigned = uploaded(&blobs, &alice).await;
    let (object, query) = presigned.url.split_once('?').unwrap();
    let other_key = format!(
        "{}/{}.png",
        presigned.key.rsplit_once('/').unwrap().0,
        uuid::Uuid::new_v4()
    );

    let refused = [
        // Another host, same path and query.
        presigned.url.replace("127.0.0.1", "localhost"),
        format!("https://evil.example/{}?{query}", presigned.key),
        // Our object without a signature, or with part of it.
        object.to_owned(),
        format!(
            "{object}?{}",
            query.replace("X-Amz-Algorithm=AWS4-HMAC-SHA256&", "")
        ),
        // A signature copied onto another key of the same owner.
        format!("{}?{query}", object.replace(&presigned.key, &other_key)),
        // The same key spelt differently, and another bucket on the same host.
        presigned.url.replace("/agent-inputs/", "/agent%2Dinputs/"),
        presigned.url.replace(blobs.bucket(), "another-bucket"),
        "not a url".to_owned(),
    ];

    for url in refused {
        let resolved = blobs.resolve(&alice, &url).await;
        assert!(
            matches!(resolved, Err(BlobError::NotSigned)),
            "{url}: {resolved:?}"
        );
    }
}

#[tokio::test]
async fn a_signed_url_for_an_image_never_uploaded_is_missing() {
    let blobs = new_blobs(5 * MIB).await;
    let alice = Principal::new("alice");
    let presigned = blobs
        .presign_upload(&alice, "image/webp", 10)
        .await
        .unwrap();

    let resolved = blobs.resolve(&alice, &presigned.url).await;

    assert!(matches!(resolved, Err(BlobError::Missing)), "{resolved:?}");
}

#[tokio::test]
async fn presign_refuses_other_types_and_sizes() {
    let blobs = new_blobs(100).await;
    let alice = Principal::new("alice");

    let tiff = blobs.presign_upload(&alice, "image/tiff", 10).await;
    let pdf = blobs.presign_upload(&alice, "application/pdf", 10).await;
    let big = blobs.presign_upload(&alice, "image/png", 101).await;
    let empty = blobs.presign_upload(&alice, "image/png", 0).await;
    let largest = blobs
        .presign_upload(&alice, "image/jpeg", 100)
        .await
        .unwrap();

    assert!(
        matches!(tiff, Err(BlobError::BadType(ref t)) if t == "image/tiff"),
        "{tiff:?}"
    );
    assert!(matches!(pdf, Err(BlobError::BadType(_))), "{pdf:?}");
    assert!(
        matches!(big, Err(BlobError::TooLarge { max: 100 })),
        "{big:?}"
    );
    assert!(matches!(empty, Err(BlobError::Empty)), "{empty:?}");
    assert!(largest.key.ends_with(".jpg"));
}

#[tokio::test]
async fn an_object_stored_with_another_type_or_size_than_allowed_is_refused() {
    // Real S3 refuses these PUTs (type and length are signed); moto stores them, which lets
    // these tests show that resolve checks the stored object itself.
    let blobs = new_blobs(20).await;
    let alice = Principal::new("alice");
    let jpeg_as_png = blobs.presign_upload(&alice, "image/png", 3).await.unwrap();
    upload(&jpeg_as_png, "image/jpeg", b"abc").await;
    let too_long = blobs.presign_upload(&alice, "image/gif", 20).await.unwrap();
    upload(&too_long, "image/gif", &[7; 21]).await;

    let bad_type = blobs.resolve(&alice, &jpeg_as_png.url).await;
    let too_large = blobs.resolve(&alice, &too_long.url).await;

    assert!(
        matches!(bad_type, Err(BlobError::BadType(ref t)) if t == "image/jpeg"),
        "{bad_type:?}"
    );
    assert!(
        matches!(too_large, Err(BlobError::TooLarge { max: 20 })),
        "{too_large:?}"
    );
}

#[tokio::test]
async fn presign_for_model_swaps_only_our_s3_paths_for_readable_urls() {
    let blobs = new_blobs(5 * MIB).await;
    let presigned = uploaded(&blobs, &Principal::new("alice")).await;
    let image = |url: String| {
        UserPart::Image(Attachment {
            source: PartSource::Url {
                value: url,
                mime_type: Some("image/png".to_owned()),
            },
            metadata: None,
        })
    };
    let ours = blobs.internal_path(&presigned.key);
    let foreign = format!("s3://another-bucket/{}", presigned.key);
    let web = "https://example.com/cat.png".to_owned();
    let mut messages = vec![Message::User {
        id: MessageId::parse("m1", 128).unwrap(),
        content: UserContent::Parts(vec![
            UserPart::Text {
                text: "what is this?".to_owned(),
            },
            image(ours),
            image(foreign.clone()),
            image(web.clone()),
        ]),
        name: None,
    }];

    blobs.presign_for_model(&mut messages).await.unwrap();

    let Message::User {
        content: UserContent::Parts(parts),
        ..
    } = &messages[0]
    else {
        panic!("a user message with parts");
    };
    let url = |part: &UserPart| match &part.attachment().unwrap().source {
        PartSource::Url { value, .. } => value.clone(),
        PartSource::Data { .. } | PartSource::File { .. } => panic!("a url part"),
    };
    let swapped = url(&parts[1]);
    assert!(swapped.starts_with("http://127.0.0.1:") && swapped.contains("X-Amz-Signature="));
    let body = reqwest::get(&swapped).await.unwrap().bytes().await.unwrap();
    assert_eq!(&body[..], PNG);
    assert_eq!(url(&parts[2]), foreign);
    assert_eq!(url(&parts[3]), web);
}
