// Where the runtime is (agui-lambda's URL and /copilotkit) and the key to call it with: from the
// page's query (?runtime=…&key=…), else what was saved in this browser, else the local server.
import { useState } from "react";

const RUNTIME_KEY = "agui-copilotkit-runtime";
const API_KEY = "agui-copilotkit-api-key";
const DEFAULT_RUNTIME = "http://127.0.0.1:8787/copilotkit";

export function readSettings() {
  const query = new URLSearchParams(location.search);
  const runtimeUrl = query.get("runtime") || localStorage.getItem(RUNTIME_KEY) || DEFAULT_RUNTIME;
  const apiKey = query.get("key") ?? localStorage.getItem(API_KEY) ?? "";
  localStorage.setItem(RUNTIME_KEY, runtimeUrl);
  localStorage.setItem(API_KEY, apiKey);
  return { runtimeUrl, apiKey };
}

export function Settings({ settings, onChange }) {
  const [open, setOpen] = useState(false);
  const [runtimeUrl, setRuntimeUrl] = useState(settings.runtimeUrl);
  const [apiKey, setApiKey] = useState(settings.apiKey);
  if (!open) {
    return (
      <button type="button" data-testid="settings" title={settings.runtimeUrl} onClick={() => setOpen(true)}>
        Runtime
      </button>
    );
  }
  const save = (event) => {
    event.preventDefault();
    localStorage.setItem(RUNTIME_KEY, runtimeUrl);
    localStorage.setItem(API_KEY, apiKey);
    setOpen(false);
    onChange({ runtimeUrl, apiKey });
  };
  return (
    <form className="settings" onSubmit={save}>
      <input value={runtimeUrl} onChange={(event) => setRuntimeUrl(event.target.value)} placeholder={DEFAULT_RUNTIME} />
      <input type="password" value={apiKey} onChange={(event) => setApiKey(event.target.value)} placeholder="API key (optional)" />
      <button type="submit">Save</button>
    </form>
  );
}
