//! The threads table as `template.yaml` declares it: creating it (`agui-lambda create-table`),
//! adding the `byOwner` index to an older table, and the start-up check of an existing one.

use super::DynamoStore;
use super::items::*;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexDescription, GlobalSecondaryIndexUpdate, IndexStatus, KeySchemaElement,
    KeyType, Projection, ProjectionType, ScalarAttributeType, TableDescription,
    TimeToLiveSpecification,
};
use std::time::Duration;

impl DynamoStore {
    /// Creates `table` as `template.yaml` declares it (on demand; `pk` HASH and `sk` RANGE, both
    /// strings; the `byOwner` index of the thread list; TTL on `expiresAt`), for tests and
    /// DynamoDB Local (`agui-lambda create-table`). Idempotent: a table that already has that key
    /// schema is kept as it is (the index added and its TTL switched on if they are missing) and
    /// reported as [`TableSetup::Existed`]; a table with another key schema, or another index
    /// named `byOwner`, is [`TableError::Mismatch`].
    pub async fn create_table(client: &Client, table: &str) -> Result<TableSetup, TableError> {
        let failed = |err: &dyn std::fmt::Display| TableError::call("CreateTable", table, err);
        let mut setup = None;
        // Twice at most: a table created by someone else between our look and our create is
        // then looked at again.
        for _ in 0..2 {
            if let Some(described) = Self::describe_table(client, table).await? {
                Self::check_key_schema(&described, table)?;
                match owner_index(&described).map_err(|what| TableError::mismatch(table, what))? {
                    None => Self::add_owner_index(client, table).await?,
                    // Being added by someone else: usable once DynamoDB has filled it.
                    Some(index)
                        if index
                            .index_status()
                            .is_some_and(|status| *status != IndexStatus::Active) =>
                    {
                        Self::wait_until_index_active(client, table).await?;
                    }
                    Some(_) => {}
                }
                setup = Some(TableSetup::Existed);
                break;
            }
            let created = client
                .create_table()
                .table_name(table)
                .billing_mode(BillingMode::PayPerRequest)
                .key_schema(key_element("pk", KeyType::Hash).map_err(|err| failed(&err))?)
                .key_schema(key_element("sk", KeyType::Range).map_err(|err| failed(&err))?)
                .set_attribute_definitions(Some(
                    table_attributes(true).map_err(|err| failed(&err))?,
                ))
                .global_secondary_indexes(
                    GlobalSecondaryIndex::builder()
                        .index_name(OWNER_INDEX)
                        .set_key_schema(Some(owner_index_keys().map_err(|err| failed(&err))?))
                        .projection(owner_index_projection())
                        .build()
                        .map_err(|err| failed(&err))?,
                )
                .send()
                .await;
            match created {
                Ok(_) => {
                    setup = Some(TableSetup::Created);
                    break;
                }
                Err(err)
                    if err
                        .as_service_error()
                        .is_some_and(|err| err.is_resource_in_use_exception()) => {}
                Err(err) => return Err(failed(&error_chain(&err))),
            }
        }
        let setup = setup.ok_or_else(|| failed(&"the table is being created or deleted"))?;
        Self::wait_until_active(client, table).await?;
        Self::ensure_ttl(client, table).await?;
        Ok(setup)
    }

    /// Checks with one `DescribeTable` call that `table` exists with the key schema
    /// `template.yaml` declares (`pk` HASH, `sk` RANGE, both strings) and the `byOwner` index
    /// (`owner` HASH S, `updatedAt` RANGE N, projecting what the thread list reads). A table
    /// without the index is [`TableError::Mismatch`] telling to run `create-table`, which adds it.
    pub async fn check_table(client: &Client, table: &str) -> Result<(), TableError> {
        let Some(described) = Self::describe_table(client, table).await? else {
            return Err(TableError::Missing {
                table: table.to_owned(),
            });
        };
        Self::check_key_schema(&described, table)?;
        match owner_index(&described) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(TableError::Mismatch {
                table: table.to_owned(),
                what: format!("it has no index {OWNER_INDEX} ({TEMPLATE_INDEX_KEY_SCHEMA})"),
                fix: format!(
                    "Add it with `agui-lambda create-table` (THREADS_TABLE={table} cargo run -- \
                     create-table); the table and its threads are kept"
                ),
            }),
            Err(what) => Err(TableError::mismatch(table, what)),
        }
    }

    fn check_key_schema(described: &TableDescription, table: &str) -> Result<(), TableError> {
        let found = key_schema_text(described, described.key_schema());
        if found != TEMPLATE_KEY_SCHEMA {
            return Err(TableError::mismatch(
                table,
                format!("its key schema is ({found}), not ({TEMPLATE_KEY_SCHEMA})"),
            ));
        }
        Ok(())
    }

    /// Adds the `byOwner` index to a table made before it existed, and waits until DynamoDB has
    /// filled it (DynamoDB Local: at once; AWS: minutes for a large table).
    async fn add_owner_index(client: &Client, table: &str) -> Result<(), TableError> {
        let failed = |err: &dyn std::fmt::Display| TableError::call("UpdateTable", table, err);
        tracing::info!(table, index = OWNER_INDEX, "adding the thread list's index");
        let updated = client
            .update_table()
            .table_name(table)
            .set_attribute_definitions(Some(table_attributes(false).map_err(|err| failed(&err))?))
            .global_secondary_index_updates(
                GlobalSecondaryIndexUpdate::builder()
                    .create(
                        CreateGlobalSecondaryIndexAction::builder()
                            .index_name(OWNER_INDEX)
                            .set_key_schema(Some(owner_index_keys().map_err(|err| failed(&err))?))
                            .projection(owner_index_projection())
                            .build()
                            .map_err(|err| failed(&err))?,
                    )
                    .build(),
            )
            .send()
            .await;
        if let Err(err) = updated {
            // Someone else may be adding the same index right now: fine once it is there.
            let present = Self::describe_table(client, table)
                .await?
                .is_some_and(|described| matches!(owner_index(&described), Ok(Some(_))));
            if !present {
                return Err(failed(&error_chain(&err)));
            }
        }
        Self::wait_until_index_active(client, table).await
    }

    /// Polls until the `byOwner` index is `ACTIVE`: DynamoDB backfills a new index of an
    /// existing table before it can be queried.
    async fn wait_until_index_active(client: &Client, table: &str) -> Result<(), TableError> {
        const POLLS: u32 = 300;
        const EVERY: Duration = Duration::from_secs(2);
        for _ in 0..POLLS {
            let status = Self::describe_table(client, table)
                .await?
                .and_then(|described| {
                    described
                        .global_secondary_indexes()
                        .iter()
                        .find(|index| index.index_name() == Some(OWNER_INDEX))
                        .map(|index| index.index_status().cloned())
                });
            match status {
                // DynamoDB Local may leave the status out.
                Some(None | Some(IndexStatus::Active)) => return Ok(()),
                Some(_) => tokio::time::sleep(EVERY).await,
                None => {
                    return Err(TableError::call(
                        "DescribeTable",
                        table,
                        &format!("the index {OWNER_INDEX} disappeared while it was being created"),
                    ));
                }
            }
        }
        Err(TableError::call(
            "DescribeTable",
            table,
            &format!(
                "the index {OWNER_INDEX} did not become ACTIVE within {} s; run create-table \
                 again to keep waiting (DynamoDB Local never finishes while about seven or more \
                 of its tables have TTL on: delete the ones you no longer need, restart it)",
                u64::from(POLLS) * EVERY.as_secs()
            ),
        ))
    }

    /// The table's description, or `None` when it does not exist.
    async fn describe_table(
        client: &Client,
        table: &str,
    ) -> Result<Option<aws_sdk_dynamodb::types::TableDescription>, TableError> {
        match client.describe_table().table_name(table).send().await {
            Ok(output) => Ok(output.table),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|err| err.is_resource_not_found_exception()) =>
            {
                Ok(None)
            }
            Err(err) => Err(TableError::call("DescribeTable", table, &error_chain(&err))),
        }
    }

    /// A new table on AWS is `CREATING` for a few seconds (DynamoDB Local: never); its TTL can
    /// only be set once it is `ACTIVE`.
    async fn wait_until_active(client: &Client, table: &str) -> Result<(), TableError> {
        use aws_sdk_dynamodb::types::TableStatus;
        for _ in 0..120 {
            let status = Self::describe_table(client, table)
                .await?
                .and_then(|described| described.table_status);
            if matches!(status, None | Some(TableStatus::Active)) {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        Err(TableError::call(
            "DescribeTable",
            table,
            &"the table did not become ACTIVE within 60 s",
        ))
    }

    /// Switches TTL on `expiresAt` on, unless it is already.
    async fn ensure_ttl(client: &Client, table: &str) -> Result<(), TableError> {
        use aws_sdk_dynamodb::types::TimeToLiveStatus;
        let described = client
            .describe_time_to_live()
            .table_name(table)
            .send()
            .await
            .map_err(|err| TableError::call("DescribeTimeToLive", table, &error_chain(&err)))?;
        if let Some(ttl) = described.time_to_live_description()
            && matches!(
                ttl.time_to_live_status(),
                Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
            )
        {
            return match ttl.attribute_name() {
                Some(TTL_ATTRIBUTE) => Ok(()),
                other => Err(TableError::mismatch(
                    table,
                    format!(
                        "its TTL attribute is {}, not {TTL_ATTRIBUTE}",
                        other.unwrap_or("unnamed")
                    ),
                )),
            };
        }
        let failed = |err: &dyn std::fmt::Display| TableError::call("UpdateTimeToLive", table, err);
        client
            .update_time_to_live()
            .table_name(table)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name(TTL_ATTRIBUTE)
                    .enabled(true)
                    .build()
                    .map_err(|err| failed(&err))?,
            )
            .send()
            .await
            .map_err(|err| failed(&error_chain(&err)))?;
        Ok(())
    }
}

/// An SDK error with its causes, `outer: inner: …` ("dispatch failure: io error: … Connection
/// refused"), without the Debug dump `DisplayErrorContext` appends.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The primary key `template.yaml` declares, as [`DynamoStore::check_table`] prints one.
const TEMPLATE_KEY_SCHEMA: &str = "pk HASH S, sk RANGE S";
/// The key of the `byOwner` index `template.yaml` declares, printed the same way.
const TEMPLATE_INDEX_KEY_SCHEMA: &str = "owner HASH S, updatedAt RANGE N";

/// A key schema as `name TYPE scalar, …`, the scalar types taken from the table's attributes.
fn key_schema_text(described: &TableDescription, keys: &[KeySchemaElement]) -> String {
    let type_of = |name: &str| {
        described
            .attribute_definitions()
            .iter()
            .find(|attribute| attribute.attribute_name() == name)
            .map_or("?", |attribute| attribute.attribute_type().as_str())
    };
    keys.iter()
        .map(|key| {
            let name = key.attribute_name();
            format!("{name} {} {}", key.key_type().as_str(), type_of(name))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `byOwner` index of a described table, `None` when it has none, or what is wrong with it.
fn owner_index(
    described: &TableDescription,
) -> Result<Option<&GlobalSecondaryIndexDescription>, String> {
    let Some(index) = described
        .global_secondary_indexes()
        .iter()
        .find(|index| index.index_name() == Some(OWNER_INDEX))
    else {
        return Ok(None);
    };
    let found = key_schema_text(described, index.key_schema());
    if found != TEMPLATE_INDEX_KEY_SCHEMA {
        return Err(format!(
            "its index {OWNER_INDEX} has the key schema ({found}), not ({TEMPLATE_INDEX_KEY_SCHEMA})"
        ));
    }
    let projection = index.projection();
    let projects_all = match projection.and_then(Projection::projection_type) {
        Some(ProjectionType::All) => true,
        Some(ProjectionType::Include) => OWNER_INDEX_ATTRIBUTES.iter().all(|name| {
            projection.is_some_and(|projection| {
                projection
                    .non_key_attributes()
                    .iter()
                    .any(|attribute| attribute == name)
            })
        }),
        _ => false,
    };
    if !projects_all {
        return Err(format!(
            "its index {OWNER_INDEX} does not project {}",
            OWNER_INDEX_ATTRIBUTES.join(", ")
        ));
    }
    Ok(Some(index))
}

fn key_element(
    name: &str,
    kind: KeyType,
) -> Result<KeySchemaElement, aws_sdk_dynamodb::error::BuildError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
}

/// The attributes keys are made of: the index's, and the table's when `with_primary`.
fn table_attributes(
    with_primary: bool,
) -> Result<Vec<AttributeDefinition>, aws_sdk_dynamodb::error::BuildError> {
    let primary: &[(&str, ScalarAttributeType)] = if with_primary {
        &[
            ("pk", ScalarAttributeType::S),
            ("sk", ScalarAttributeType::S),
        ]
    } else {
        &[]
    };
    primary
        .iter()
        .cloned()
        .chain([
            (OWNER, ScalarAttributeType::S),
            (UPDATED_AT, ScalarAttributeType::N),
        ])
        .map(|(name, kind)| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(kind)
                .build()
        })
        .collect()
}

fn owner_index_keys() -> Result<Vec<KeySchemaElement>, aws_sdk_dynamodb::error::BuildError> {
    Ok(vec![
        key_element(OWNER, KeyType::Hash)?,
        key_element(UPDATED_AT, KeyType::Range)?,
    ])
}

fn owner_index_projection() -> Projection {
    Projection::builder()
        .projection_type(ProjectionType::Include)
        .set_non_key_attributes(Some(
            OWNER_INDEX_ATTRIBUTES
                .iter()
                .map(|&name| name.to_owned())
                .collect(),
        ))
        .build()
}
/// The attribute `template.yaml` names for TTL.
const TTL_ATTRIBUTE: &str = "expiresAt";

/// What [`DynamoStore::create_table`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableSetup {
    Created,
    /// The table was there already, with the expected key schema.
    Existed,
}

/// Why the threads table cannot be created or used.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("table {table} does not exist")]
    Missing { table: String },
    #[error("table {table} exists but does not match template.yaml: {what}. {fix}")]
    Mismatch {
        table: String,
        what: String,
        /// What to do about it.
        fix: String,
    },
    #[error("DynamoDB {call} on table {table} failed: {reason}")]
    Call {
        call: &'static str,
        table: String,
        reason: String,
    },
}

impl TableError {
    /// A mismatch only a new table fixes.
    fn mismatch(table: &str, what: String) -> Self {
        TableError::Mismatch {
            table: table.to_owned(),
            what,
            fix: format!(
                "Delete it (aws dynamodb delete-table --table-name {table}) or set THREADS_TABLE \
                 to another name"
            ),
        }
    }

    fn call(call: &'static str, table: &str, reason: &dyn std::fmt::Display) -> Self {
        TableError::Call {
            call,
            table: table.to_owned(),
            reason: reason.to_string(),
        }
    }
}
