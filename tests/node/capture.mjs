// A captured stream for the checks that read them (ag-ui-validate, scripts/agui_conformance.py):
// the response body as DIR/NAME.sse and, beside it, the run input it answered as
// DIR/NAME.input.json, which tells the conformance suite what the client declared.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

export function saveCapture(dir, name, body, requestBody) {
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `${name}.sse`), body);
  if (typeof requestBody === "string") writeFileSync(path.join(dir, `${name}.input.json`), requestBody);
}
