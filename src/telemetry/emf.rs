//! CloudWatch metrics in the Embedded Metric Format: one JSON record per run, written as one
//! line to stdout, which Lambda's log pipeline turns into metrics with no collector and no API
//! call. Dimension sets `[service]` and `[service, outcome, model, dialect]`.

use serde_json::{Map, Value, json};
use std::io::Write;
#[cfg(any(test, feature = "test-utils"))]
use std::sync::{Arc, Mutex};

/// `METRICS_NAMESPACE` when unset.
pub(crate) const DEFAULT_NAMESPACE: &str = "AguiLambda";

/// What one run measured, for its record.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RunMetrics {
    /// `finished`, `interrupted`, `cancelled` or `error`.
    pub outcome: &'static str,
    pub model: String,
    /// The wire format it was asked in: `ag-ui`, `ag-kit`, `agentscope` or `v1-agent`.
    pub dialect: &'static str,
    pub duration_ms: f64,
    /// From the request's arrival to `RUN_STARTED`, the stream's first bytes.
    pub time_to_first_byte_ms: f64,
    /// From the request's arrival to the model's first output; none when it produced nothing.
    pub time_to_first_token_ms: Option<f64>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub tool_calls: u32,
    /// Sub-agent runs the run started or continued (each also writes a record of its own, its
    /// dialect `subagent`).
    pub subagent_runs: u32,
    pub steps: u32,
    /// Times the run compacted its thread to fit the model's window.
    pub compactions: u32,
    pub store: StoreFigures,
    pub cancelled: bool,
    /// Times a client rejoined the run's stream while it ran.
    pub resumes: u32,
    /// Times the run went on in another invocation (it outlasted one).
    pub handoffs: u32,
    pub thread_id: String,
    pub run_id: String,
    pub trace_id: Option<String>,
}

/// The run's calls to the thread store, the time they took and the capacity they consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct StoreFigures {
    pub read_calls: u64,
    pub write_calls: u64,
    pub read_ms: f64,
    pub write_ms: f64,
    pub read_capacity_units: f64,
    pub write_capacity_units: f64,
    /// Of the calls, those for long-term memory (the injected block and the memory tools).
    pub memory_read_calls: u64,
    pub memory_write_calls: u64,
    /// What the read calls brought back: their answers' bytes and the items in them.
    pub read_bytes: u64,
    pub read_items: u64,
}

/// Where records go: stdout, or (in tests) a list of the same lines.
#[derive(Debug, Clone)]
enum Output {
    Stdout,
    #[cfg(any(test, feature = "test-utils"))]
    Memory(Arc<Mutex<Vec<String>>>),
}

/// Writes one EMF record per run.
#[derive(Debug, Clone)]
pub struct Emf {
    namespace: String,
    service: String,
    output: Output,
}

impl Emf {
    pub fn stdout(namespace: impl Into<String>, service: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            service: service.into(),
            output: Output::Stdout,
        }
    }

    /// Records kept in memory instead of printed: the lines a test reads.
    #[cfg(any(test, feature = "test-utils"))]
    pub fn in_memory(
        namespace: impl Into<String>,
        service: impl Into<String>,
    ) -> (Self, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let emf = Self {
            namespace: namespace.into(),
            service: service.into(),
            output: Output::Memory(lines.clone()),
        };
        (emf, lines)
    }

    pub(crate) fn emit(&self, run: &RunMetrics) {
        let line = self.record(run, chrono::Utc::now().timestamp_millis());
        match &self.output {
            Output::Stdout => {
                // One write, so the record never interleaves with a log line.
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(format!("{line}\n").as_bytes());
                let _ = stdout.flush();
            }
            #[cfg(any(test, feature = "test-utils"))]
            Output::Memory(lines) => {
                if let Ok(mut lines) = lines.lock() {
                    lines.push(line);
                }
            }
        }
    }

    /// The record's JSON text.
    pub(crate) fn record(&self, run: &RunMetrics, timestamp_ms: i64) -> String {
        const MS: &str = "Milliseconds";
        const COUNT: &str = "Count";
        const BYTES: &str = "Bytes";
        let store = &run.store;
        let mut metrics: Vec<(&str, &str, Value)> = vec![
            ("Runs", COUNT, json!(1)),
            ("Errors", COUNT, json!(u8::from(run.outcome == "error"))),
            ("Duration", MS, json!(run.duration_ms)),
            ("TimeToFirstByte", MS, json!(run.time_to_first_byte_ms)),
        ];
        if let Some(ttft) = run.time_to_first_token_ms {
            metrics.push(("TimeToFirstToken", MS, json!(ttft)));
        }
        metrics.extend([
            ("InputTokens", COUNT, json!(run.input_tokens)),
            ("OutputTokens", COUNT, json!(run.output_tokens)),
            ("ToolCalls", COUNT, json!(run.tool_calls)),
            ("SubagentRuns", COUNT, json!(run.subagent_runs)),
            ("Steps", COUNT, json!(run.steps)),
            ("Compactions", COUNT, json!(run.compactions)),
            ("StoreReadTime", MS, json!(store.read_ms)),
            ("StoreWriteTime", MS, json!(store.write_ms)),
            ("StoreReadCalls", COUNT, json!(store.read_calls)),
            ("StoreWriteCalls", COUNT, json!(store.write_calls)),
            ("StoreReadCapacity", COUNT, json!(store.read_capacity_units)),
            ("StoreReadBytes", BYTES, json!(store.read_bytes)),
            ("StoreReadItems", COUNT, json!(store.read_items)),
            (
                "StoreWriteCapacity",
                COUNT,
                json!(store.write_capacity_units),
            ),
            ("MemoryReadCalls", COUNT, json!(store.memory_read_calls)),
            ("MemoryWriteCalls", COUNT, json!(store.memory_write_calls)),
            ("Cancels", COUNT, json!(u8::from(run.cancelled))),
            ("Resumes", COUNT, json!(run.resumes)),
            ("Handoffs", COUNT, json!(run.handoffs)),
        ]);
        let definitions: Vec<Value> = metrics
            .iter()
            .map(|(name, unit, _)| json!({"Name": name, "Unit": unit}))
            .collect();
        let mut record = Map::new();
        record.insert(
            "_aws".into(),
            json!({
                "Timestamp": timestamp_ms,
                "CloudWatchMetrics": [{
                    "Namespace": self.namespace,
                    "Dimensions": [["service"], ["service", "outcome", "model", "dialect"]],
                    "Metrics": definitions,
                }],
            }),
        );
        record.insert("service".into(), json!(self.service));
        record.insert("outcome".into(), json!(run.outcome));
        record.insert("model".into(), json!(run.model));
        record.insert("dialect".into(), json!(run.dialect));
        for (name, _, value) in metrics {
            record.insert(name.into(), value);
        }
        // Searchable in Logs Insights, never dimensions (one metric per run id would be costly).
        record.insert("threadId".into(), json!(run.thread_id));
        record.insert("runId".into(), json!(run.run_id));
        if let Some(trace_id) = &run.trace_id {
            record.insert("traceId".into(), json!(trace_id));
        }
        Value::Object(record).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_names_every_metric_it_carries_once_with_its_unit() {
        let emf = Emf::stdout("Ns", "svc");
        let run = RunMetrics {
            outcome: "error",
            model: "m".into(),
            dialect: "ag-ui",
            duration_ms: 12.5,
            input_tokens: 7,
            ..RunMetrics::default()
        };
        let record: Value = serde_json::from_str(&emf.record(&run, 1_700_000_000_000)).unwrap();
        let directive = &record["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "Ns");
        let names: Vec<&str> = directive["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|metric| metric["Name"].as_str().unwrap())
            .collect();
        assert!(!names.contains(&"TimeToFirstToken"), "no token, no metric");
        for name in &names {
            assert!(record[*name].is_number(), "{name} has a value");
        }
        assert_eq!(record["Errors"], 1);
        assert_eq!(record["Handoffs"], 0);
        assert_eq!(record["InputTokens"], 7);
        assert_eq!(record["Duration"], 12.5);
        assert_eq!(record["service"], "svc");
        assert_eq!(record["_aws"]["Timestamp"], 1_700_000_000_000_i64);
    }
}
