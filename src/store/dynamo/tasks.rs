//! The DynamoDB store's task records of detached runs: `TASK#<runId>` items in the caller's
//! `OWNER#<principal>` partition, kept as long as the run event logs.

use super::DynamoStore;
use super::items::*;
use crate::auth::Principal;
use crate::protocol::{RunId, ThreadId};
use crate::store::{StoreError, TaskFailure, TaskRecord, TaskRecords, TaskState, task_message};
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure, Update,
};

#[async_trait]
impl TaskRecords for DynamoStore {
    async fn create_task(&self, task: &TaskRecord) -> Result<(), StoreError> {
        let now = now_ms();
        let (state, failure) = match &task.state {
            TaskState::Accepted => ("accepted", None),
            TaskState::Started => ("started", None),
            TaskState::Failed { code, message } => ("failed", Some((code, message))),
        };
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", owner_pk(task.owner.as_str()))
            .item("sk", task_sk(task.run_id.as_str()))
            .item("thread", s(task.thread_id.as_str()))
            .item("createdThread", AttributeValue::Bool(task.created_thread))
            .item("acceptedAt", n(task.accepted_at_ms))
            .item(TASK_STATE, s(state))
            // Kept as long as the run's event log, which outlives any run it stands for.
            .item("expiresAt", n(now / 1000 + self.events_ttl_seconds))
            // An expired record not yet removed by TTL counts as absent.
            .condition_expression("attribute_not_exists(pk) OR expiresAt < :now_s")
            .expression_attribute_values(":now_s", n(now / 1000))
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        if let Some((code, message)) = failure {
            put = put
                .item("failCode", s(code.as_str()))
                .item("failMessage", s(task_message(message)));
        }
        if self.put_if(put).await? {
            Ok(())
        } else {
            Err(StoreError::Conflict)
        }
    }

    async fn claim_task(&self, owner: &Principal, run_id: &RunId) -> Result<bool, StoreError> {
        let now = now_ms();
        // A missing item fails the condition too: `#st` is then absent.
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", owner_pk(owner.as_str()))
            .key("sk", task_sk(run_id.as_str()))
            .update_expression("SET #st = :started, startedAt = :now")
            .condition_expression(
                "#st = :accepted AND (attribute_not_exists(expiresAt) OR expiresAt > :now_s)",
            )
            .expression_attribute_names("#st", TASK_STATE)
            .expression_attribute_values(":started", s("started"))
            .expression_attribute_values(":accepted", s("accepted"))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":now_s", n(now / 1000))
            .build()
            .map_err(unavailable)?;
        Ok(self.update_task(update).await?.is_none())
    }

    async fn fail_task(&self, failure: TaskFailure<'_>) -> Result<(), StoreError> {
        let now = now_ms();
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", owner_pk(failure.owner.as_str()))
            .key("sk", task_sk(failure.run_id.as_str()))
            .update_expression(
                "SET #st = :failed, failCode = :code, failMessage = :message, failedAt = :now",
            )
            .condition_expression(
                "attribute_exists(pk) AND #st <> :failed AND \
                 (attribute_not_exists(expiresAt) OR expiresAt > :now_s)",
            )
            .expression_attribute_names("#st", TASK_STATE)
            .expression_attribute_values(":failed", s("failed"))
            .expression_attribute_values(":code", s(failure.code))
            .expression_attribute_values(":message", s(task_message(failure.message)))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":now_s", n(now / 1000))
            .build()
            .map_err(unavailable)?;
        match self.update_task(update).await? {
            None => Ok(()),
            // Failed already: the first reason stays.
            Some(Some(old)) if is_present(&old) && get_s(&old, TASK_STATE) == Some("failed") => {
                Ok(())
            }
            Some(_) => Err(StoreError::NotFound),
        }
    }

    async fn task(
        &self,
        owner: &Principal,
        run_id: &RunId,
    ) -> Result<Option<TaskRecord>, StoreError> {
        match self.owner_item(owner, task_sk(run_id.as_str())).await? {
            Some(item) => parse_task(&item, owner, run_id).map(Some),
            None => Ok(None),
        }
    }
}

impl DynamoStore {
    /// One conditional UpdateItem of a task record: `Ok(None)` when it was made, the item as it
    /// was (if any) when the condition refused it.
    async fn update_task(&self, update: Update) -> Result<Option<Option<Item>>, StoreError> {
        self.count_write();
        let result = self
            .client
            .update_item()
            .table_name(update.table_name)
            .set_key(Some(update.key))
            .update_expression(update.update_expression)
            .set_condition_expression(update.condition_expression)
            .set_expression_attribute_names(update.expression_attribute_names)
            .set_expression_attribute_values(update.expression_attribute_values)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match result {
            Ok(output) => {
                self.count_write_capacity(output.consumed_capacity());
                Ok(None)
            }
            Err(error) => match error.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(failed) => {
                    Ok(Some(failed.item().cloned()))
                }
                other => Err(unavailable(other)),
            },
        }
    }
}

/// A task item, parsed.
fn parse_task(item: &Item, owner: &Principal, run_id: &RunId) -> Result<TaskRecord, StoreError> {
    let corrupt = || StoreError::Corrupt("a task record is missing fields".to_owned());
    let state = match get_s(item, TASK_STATE) {
        Some("accepted") => TaskState::Accepted,
        Some("started") => TaskState::Started,
        Some("failed") => TaskState::Failed {
            code: get_s(item, "failCode").unwrap_or_default().to_owned(),
            message: get_s(item, "failMessage").unwrap_or_default().to_owned(),
        },
        _ => return Err(corrupt()),
    };
    Ok(TaskRecord {
        owner: owner.clone(),
        run_id: run_id.clone(),
        thread_id: get_s(item, "thread")
            .and_then(|id| ThreadId::parse(id, crate::protocol::ids::MAX_ID_LEN).ok())
            .ok_or_else(corrupt)?,
        created_thread: match item.get("createdThread") {
            Some(AttributeValue::Bool(created)) => *created,
            _ => return Err(corrupt()),
        },
        accepted_at_ms: get_n(item, "acceptedAt").ok_or_else(corrupt)?,
        state,
    })
}
