//! The `calculate` tool: two numbers and an operation in, the result out. The schema rejects
//! what a schema can (a missing operand, an unknown operation); the handler rejects what it
//! cannot (a division by zero, a result too large to be a number), and the model is told why.
//! The last result is kept in the thread's state (`lastResult`), so a client can show it.

use agui_lambda::tools::{FnTool, StatePatch, ToolBuilder, ToolContext, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Operation {
    Add,
    Subtract,
    Multiply,
    Divide,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Calculation {
    pub a: f64,
    pub b: f64,
    pub operation: Operation,
}

/// The tool, ready for `ToolRegistry::add`.
pub(crate) fn calculator() -> FnTool {
    ToolBuilder::new(
        "calculate",
        "Exact arithmetic on two numbers: add, subtract, multiply or divide. Use it for any \
         calculation instead of working it out yourself.",
    )
    .parameters(json!({
        "type": "object",
        "properties": {
            "a": {"type": "number", "description": "the first operand"},
            "b": {"type": "number", "description": "the second operand"},
            "operation": {"type": "string", "enum": ["add", "subtract", "multiply", "divide"]},
        },
        "required": ["a", "b", "operation"],
        "additionalProperties": false,
    }))
    .timeout(Duration::from_secs(1))
    .handler(
        |calculation: Calculation, _context: ToolContext| async move {
            let result = calculate(&calculation)?;
            // The same number in the state, for the client's display; JSON numbers print without
            // a trailing `.0` when whole.
            let result = json_number(result);
            let patch: StatePatch = serde_json::from_value(json!([
                {"op": "add", "path": "/lastResult", "value": result}
            ]))
            .map_err(|err| ToolError::Fatal(format!("the state patch is malformed: {err}")))?;
            Ok(ToolOutput::json(&json!({"result": result})).with_state_patch(patch))
        },
    )
}

/// The arithmetic, with the checks a schema cannot express.
pub(crate) fn calculate(calculation: &Calculation) -> Result<f64, ToolError> {
    let Calculation { a, b, operation } = calculation;
    let result = match operation {
        Operation::Add => a + b,
        Operation::Subtract => a - b,
        Operation::Multiply => a * b,
        Operation::Divide if *b == 0.0 => {
            return Err(ToolError::Failed(
                "cannot divide by zero; ask the user for another divisor".to_owned(),
            ));
        }
        Operation::Divide => a / b,
    };
    if !result.is_finite() {
        return Err(ToolError::Failed(format!(
            "the result of {a} and {b} is too large to represent"
        )));
    }
    Ok(result)
}

/// A whole result as an integer (`42`, not `42.0`), anything else as it is.
fn json_number(value: f64) -> serde_json::Value {
    // Exactly representable whole numbers only: 2^53.
    if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calc(a: f64, b: f64, operation: Operation) -> Result<f64, ToolError> {
        calculate(&Calculation { a, b, operation })
    }

    #[test]
    fn arithmetic_and_its_limits() {
        assert_eq!(calc(6.0, 7.0, Operation::Multiply), Ok(42.0));
        assert_eq!(calc(1.0, 4.0, Operation::Divide), Ok(0.25));
        assert!(
            matches!(calc(1.0, 0.0, Operation::Divide), Err(ToolError::Failed(m)) if m.contains("zero"))
        );
        assert!(
            matches!(calc(f64::MAX, f64::MAX, Operation::Add), Err(ToolError::Failed(m)) if m.contains("too large"))
        );
        assert_eq!(json_number(42.0), json!(42));
        assert_eq!(json_number(0.25), json!(0.25));
    }
}
