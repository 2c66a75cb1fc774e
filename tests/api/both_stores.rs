//! The two thread stores as test subjects: a store-level scenario runs on the in-memory store
//! and on DynamoDB Local (a fresh table), as `<scenario>::memory` and `<scenario>::dynamo`.

use agui_lambda::testing::store::{DynamoStore, MemoryStore, ThreadStore};
use aws_sdk_dynamodb::Client;
use std::sync::Arc;

use crate::dynamo_local;

/// One store under test; `table` and `dynamo` (the same store, for its call counts) are set
/// for DynamoDB.
pub(crate) struct Subject {
    pub(crate) store: Arc<dyn ThreadStore>,
    pub(crate) table: Option<(Client, String)>,
    pub(crate) dynamo: Option<Arc<DynamoStore>>,
}

impl Subject {
    pub(crate) fn memory() -> Self {
        Self {
            store: Arc::new(MemoryStore::new()),
            table: None,
            dynamo: None,
        }
    }

    pub(crate) async fn dynamo() -> Self {
        let (client, table) = dynamo_local::new_table().await;
        // With a TTL, so every write carries `expiresAt` as it does in production.
        let dynamo = Arc::new(DynamoStore::new(client.clone(), table.clone(), 30));
        Self {
            store: dynamo.clone(),
            table: Some((client, table)),
            dynamo: Some(dynamo),
        }
    }
}

/// Each scenario on both stores: `<scenario>::memory` and `<scenario>::dynamo`.
macro_rules! on_both_stores {
    ($($scenario:ident),* $(,)?) => {
        $(
            mod $scenario {
                #[tokio::test]
                async fn memory() {
                    super::$scenario(super::Subject::memory()).await;
                }

                #[tokio::test]
                async fn dynamo() {
                    super::$scenario(super::Subject::dynamo().await).await;
                }
            }
        )*
    };
}

pub(crate) use on_both_stores;
