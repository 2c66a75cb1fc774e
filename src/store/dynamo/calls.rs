//! Every DynamoDB call the store makes, seen once: a `DynamoDB.<Operation>` client span with the
//! database semantic conventions' attributes, and its time (a read's bytes and items too)
//! counted into the run's meter. An SDK interceptor, so no call site can forget it.

use crate::store::meter::{self, Access};
use aws_sdk_dynamodb::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeSerializationInterceptorContextRef,
    FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation::{
    batch_get_item::BatchGetItemOutput, get_item::GetItemOutput, query::QueryOutput,
    scan::ScanOutput, transact_get_items::TransactGetItemsOutput,
};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_types::config_bag::{Storable, StoreReplace};
use std::time::Instant;

/// The interceptor, for the store's one table.
#[derive(Debug)]
pub(super) struct StoreCalls {
    pub table: String,
}

/// A call in flight: its span and when it began.
#[derive(Debug)]
struct InFlight {
    span: tracing::Span,
    began: Instant,
    access: Access,
}

impl Storable for InFlight {
    type Storer = StoreReplace<Self>;
}

fn access_of(operation: &str) -> Access {
    match operation {
        "GetItem" | "BatchGetItem" | "Query" | "Scan" | "TransactGetItems" | "DescribeTable" => {
            Access::Read
        }
        _ => Access::Write,
    }
}

/// The items a read call's output holds.
fn items_in(output: &aws_smithy_runtime_api::client::interceptors::context::Output) -> u64 {
    let count = |count: i32| u64::try_from(count).unwrap_or(0);
    if let Some(query) = output.downcast_ref::<QueryOutput>() {
        count(query.count)
    } else if let Some(get) = output.downcast_ref::<GetItemOutput>() {
        u64::from(get.item.is_some())
    } else if let Some(scan) = output.downcast_ref::<ScanOutput>() {
        count(scan.count)
    } else if let Some(batch) = output.downcast_ref::<BatchGetItemOutput>() {
        batch
            .responses
            .iter()
            .flat_map(|tables| tables.values())
            .map(|items| items.len() as u64)
            .sum()
    } else if let Some(transact) = output.downcast_ref::<TransactGetItemsOutput>() {
        transact
            .responses
            .iter()
            .flatten()
            .filter(|response| response.item.is_some())
            .count() as u64
    } else {
        0
    }
}

impl Intercept for StoreCalls {
    fn name(&self) -> &'static str {
        "StoreCalls"
    }

    // Not `read_before_execution`: a client interceptor runs that before the operation's own
    // configuration (its name) is in the bag.
    fn read_before_serialization(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let operation = cfg.load::<Metadata>().map_or("", Metadata::name);
        let access = access_of(operation);
        let span = crate::telemetry::trace_span!(
            "DynamoDB",
            "client",
            db.system.name = "aws.dynamodb",
            db.operation.name = tracing::field::Empty,
            rpc.system = "aws-api",
            rpc.service = "DynamoDB",
            rpc.method = tracing::field::Empty,
            aws.dynamodb.table_names = tracing::field::Empty,
        );
        if !span.is_disabled() {
            span.record("otel.name", format!("DynamoDB.{operation}"));
            span.record("db.operation.name", operation);
            span.record("rpc.method", operation);
            span.record("aws.dynamodb.table_names", self.table.as_str());
        }
        cfg.interceptor_state().store_put(InFlight {
            span,
            began: Instant::now(),
            access,
        });
        Ok(())
    }

    // Each attempt's answer, once its body is read: the bytes and items a read brought back.
    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if cfg
            .load::<InFlight>()
            .is_some_and(|call| call.access == Access::Read)
        {
            let bytes = context.response().body().bytes().map_or(0, <[u8]>::len);
            let items = context.output_or_error().map_or(0, items_in);
            meter::count_read(bytes as u64, items);
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(call) = cfg.load::<InFlight>() {
            meter::count_call(call.access, call.began.elapsed());
            if matches!(context.output_or_error(), Some(Err(_))) && !call.span.is_disabled() {
                let status = context
                    .response()
                    .map(|response| response.status().as_u16().to_string())
                    .unwrap_or_else(|| "_OTHER".to_owned());
                crate::telemetry::record_error(&call.span, &status);
            }
        }
        // Ends the span now, not whenever the SDK drops its configuration.
        cfg.interceptor_state().unset::<InFlight>();
        Ok(())
    }
}
