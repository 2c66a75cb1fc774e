// A2UI v0.9 surfaces on the dev page (docs/generative-ui.md): a small renderer of the basic
// catalog's components from an `a2ui-surface` activity's `a2ui_operations`, its data model kept
// in the page (inputs write to their bound paths), and a Button's action sent back as
// `forwardedProps.a2uiAction` with its context resolved against what was typed. Before the
// surface is painted the activity shows its lifecycle: building, retrying, failed.

export const ACTIVITY_TYPE = "a2ui-surface";

// ---- the data model: JSON Pointers, relative ones inside a template's item -------------------

const decode = (segment) => segment.replaceAll("~1", "/").replaceAll("~0", "~");
const segments = (path) => path.split("/").filter((s) => s !== "").map(decode);

// An absolute pointer for `path` read inside `scope` (a template item's pointer, or "").
function absolute(path, scope) {
  if (path.startsWith("/")) return path;
  return `${scope}/${path}`;
}

function read(data, pointer) {
  let cursor = data;
  for (const segment of segments(pointer)) {
    if (cursor == null || typeof cursor !== "object") return undefined;
    cursor = cursor[segment];
  }
  return cursor;
}

function write(surface, pointer, value) {
  const parts = segments(pointer);
  if (!parts.length) {
    surface.data = value;
    return;
  }
  let cursor = surface.data;
  for (const segment of parts.slice(0, -1)) {
    if (cursor[segment] == null || typeof cursor[segment] !== "object") cursor[segment] = {};
    cursor = cursor[segment];
  }
  cursor[parts.at(-1)] = value;
}

const isBinding = (value) => value && typeof value === "object" && !Array.isArray(value) && typeof value.path === "string";

// A literal, or the value its binding points at.
function resolve(surface, value, scope) {
  return isBinding(value) ? read(surface.data, absolute(value.path, scope)) : value;
}

const text = (surface, value, scope) => {
  const resolved = resolve(surface, value, scope);
  if (resolved == null) return "";
  return typeof resolved === "object" ? JSON.stringify(resolved) : String(resolved);
};

// ---- operations --------------------------------------------------------------------------------

// The surfaces an activity's operations describe, by id (createSurface, updateComponents,
// updateDataModel, deleteSurface, in order).
export function surfacesOf(operations) {
  const surfaces = new Map();
  for (const operation of operations ?? []) {
    if (operation.createSurface) {
      const { surfaceId, catalogId } = operation.createSurface;
      surfaces.set(surfaceId, { surfaceId, catalogId, components: new Map(), data: {} });
    } else if (operation.updateComponents) {
      const surface = surfaces.get(operation.updateComponents.surfaceId);
      for (const component of operation.updateComponents.components ?? []) surface?.components.set(component.id, component);
    } else if (operation.updateDataModel) {
      const { surfaceId, path = "/", value } = operation.updateDataModel;
      const surface = surfaces.get(surfaceId);
      if (surface) write(surface, path, structuredClone(value));
    } else if (operation.deleteSurface) {
      surfaces.delete(operation.deleteSurface.surfaceId);
    }
  }
  return surfaces;
}

// ---- painting -----------------------------------------------------------------------------------

function el(tag, className, content) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (content !== undefined) node.textContent = content;
  return node;
}

// A component's children: ids, or a template repeated per item of a list.
function children(surface, value, scope, ctx) {
  if (Array.isArray(value)) return value.map((id) => paint(surface, id, scope, ctx));
  if (value && typeof value === "object" && typeof value.componentId === "string") {
    const listPath = absolute(value.path, scope);
    const list = read(surface.data, listPath);
    return (Array.isArray(list) ? list : []).map((_, index) => paint(surface, value.componentId, `${listPath}/${index}`, ctx));
  }
  return [];
}

// An input bound to `binding`: shows its value, writes what is typed.
function bind(surface, input, binding, scope, property, read_) {
  if (!isBinding(binding)) {
    if (binding !== undefined) input[property] = property === "checked" ? Boolean(binding) : binding;
    return;
  }
  const pointer = absolute(binding.path, scope);
  const current = read(surface.data, pointer);
  if (current !== undefined) input[property] = property === "checked" ? Boolean(current) : current;
  input.addEventListener("input", () => write(surface, pointer, read_(input)));
  input.addEventListener("change", () => write(surface, pointer, read_(input)));
}

function labelled(label, control) {
  const wrap = el("label", "a2ui-field");
  if (label) wrap.append(el("span", "a2ui-label", label));
  wrap.append(control);
  return wrap;
}

function paint(surface, id, scope, ctx) {
  const component = surface.components.get(id);
  if (!component) return el("span", "a2ui-missing", `[${id}?]`);
  if (ctx.depth > 64) return el("span", "a2ui-missing", "[too deep]");
  ctx.depth++;
  try {
    const node = paintComponent(surface, component, scope, ctx);
    node.dataset.a2uiId = id;
    node.dataset.a2uiComponent = component.component;
    return node;
  } finally {
    ctx.depth--;
  }
}

const PAINTERS = {
  Text(surface, c, scope) {
    const tag = /^h[1-5]$/.test(c.variant ?? "") ? c.variant : c.variant === "caption" ? "small" : "p";
    return el(tag, "a2ui-text", text(surface, c.text, scope));
  },
  Image(surface, c, scope) {
    const img = el("img", `a2ui-image ${c.variant ?? ""}`);
    img.src = text(surface, c.url, scope);
    img.alt = text(surface, c.description, scope);
    return img;
  },
  Icon(surface, c, scope) {
    return el("span", "a2ui-icon", `◆ ${text(surface, c.name, scope)}`);
  },
  Video(surface, c, scope) {
    const video = el("video", "a2ui-media");
    video.controls = true;
    video.src = text(surface, c.url, scope);
    return video;
  },
  AudioPlayer(surface, c, scope) {
    const audio = el("audio", "a2ui-media");
    audio.controls = true;
    audio.src = text(surface, c.url, scope);
    return labelled(text(surface, c.description, scope), audio);
  },
  Row: (surface, c, scope, ctx) => layout("a2ui-row", surface, c, scope, ctx),
  Column: (surface, c, scope, ctx) => layout("a2ui-column", surface, c, scope, ctx),
  List: (surface, c, scope, ctx) => layout(c.direction === "horizontal" ? "a2ui-row" : "a2ui-column", surface, c, scope, ctx),
  Card(surface, c, scope, ctx) {
    const card = el("div", "a2ui-card");
    card.append(paint(surface, c.child, scope, ctx));
    return card;
  },
  Tabs(surface, c, scope, ctx) {
    const tabs = el("div", "a2ui-tabs");
    const bar = el("div", "a2ui-tab-bar");
    const panel = el("div", "a2ui-tab-panel");
    (c.tabs ?? []).forEach((tab, index) => {
      const button = el("button", "a2ui-tab", text(surface, tab.title, scope));
      button.type = "button";
      button.addEventListener("click", () => panel.replaceChildren(paint(surface, tab.child, scope, ctx)));
      bar.append(button);
      if (index === 0) panel.append(paint(surface, tab.child, scope, ctx));
    });
    tabs.append(bar, panel);
    return tabs;
  },
  Modal(surface, c, scope, ctx) {
    const wrap = el("div", "a2ui-modal");
    const dialog = el("dialog", "a2ui-dialog");
    const close = el("button", "", "Close");
    close.type = "button";
    close.addEventListener("click", () => dialog.close());
    dialog.append(paint(surface, c.content, scope, ctx), close);
    const trigger = paint(surface, c.trigger, scope, ctx);
    trigger.addEventListener("click", () => dialog.showModal());
    wrap.append(trigger, dialog);
    return wrap;
  },
  Divider: (_surface, c) => el("hr", `a2ui-divider ${c.axis === "vertical" ? "vertical" : ""}`),
  Button(surface, c, scope, ctx) {
    const button = el("button", `a2ui-button ${c.variant ?? ""}`);
    button.type = "button";
    button.append(paint(surface, c.child, scope, ctx));
    const event = c.action?.event;
    if (event) {
      button.addEventListener("click", () => {
        const context = {};
        for (const [key, value] of Object.entries(event.context ?? {})) context[key] = resolve(surface, value, scope);
        ctx.onAction({
          name: event.name,
          surfaceId: surface.surfaceId,
          sourceComponentId: c.id,
          timestamp: new Date().toISOString(),
          context,
        });
      });
    }
    return button;
  },
  TextField(surface, c, scope) {
    const long = c.variant === "longText";
    const input = el(long ? "textarea" : "input", "a2ui-input");
    if (!long) input.type = c.variant === "obscured" ? "password" : c.variant === "number" ? "number" : "text";
    bind(surface, input, c.value, scope, "value", (node) => node.value);
    return labelled(text(surface, c.label, scope), input);
  },
  CheckBox(surface, c, scope) {
    const input = el("input", "a2ui-check");
    input.type = "checkbox";
    bind(surface, input, c.value, scope, "checked", (node) => node.checked);
    const wrap = el("label", "a2ui-field inline");
    wrap.append(input, el("span", "", text(surface, c.label, scope)));
    return wrap;
  },
  ChoicePicker(surface, c, scope) {
    const group = el("fieldset", "a2ui-choices");
    group.append(el("legend", "", text(surface, c.label, scope)));
    const single = c.variant !== "multipleSelection";
    const pointer = isBinding(c.value) ? absolute(c.value.path, scope) : null;
    const chosen = () => (pointer ? read(surface.data, pointer) : c.value) ?? [];
    const name = `choice-${c.id}-${Math.random().toString(36).slice(2)}`;
    for (const option of c.options ?? []) {
      const input = el("input");
      input.type = single ? "radio" : "checkbox";
      input.name = name;
      input.checked = chosen().includes(option.value);
      input.addEventListener("change", () => {
        if (!pointer) return;
        const now = single ? [option.value] : input.checked ? [...chosen(), option.value] : chosen().filter((v) => v !== option.value);
        write(surface, pointer, now);
      });
      const wrap = el("label", "a2ui-field inline");
      wrap.append(input, el("span", "", text(surface, option.label, scope)));
      group.append(wrap);
    }
    return group;
  },
  Slider(surface, c, scope) {
    const input = el("input", "a2ui-slider");
    input.type = "range";
    input.min = String(c.min ?? 0);
    input.max = String(c.max ?? 100);
    bind(surface, input, c.value, scope, "value", (node) => Number(node.value));
    return labelled(text(surface, c.label, scope), input);
  },
  DateTimeInput(surface, c, scope) {
    const input = el("input", "a2ui-input");
    input.type = c.enableDate && c.enableTime ? "datetime-local" : c.enableTime ? "time" : "date";
    bind(surface, input, c.value, scope, "value", (node) => node.value);
    return labelled(text(surface, c.label, scope), input);
  },
};

function layout(className, surface, c, scope, ctx) {
  const box = el("div", `a2ui-layout ${className}`);
  if (c.align) box.dataset.align = c.align;
  if (c.justify) box.dataset.justify = c.justify;
  box.append(...children(surface, c.children, scope, ctx));
  return box;
}

function paintComponent(surface, component, scope, ctx) {
  const painter = PAINTERS[component.component];
  return painter ? painter(surface, component, scope, ctx) : el("span", "a2ui-missing", `[${component.component}]`);
}

// ---- an activity: its lifecycle, or its surfaces -------------------------------------------

function lifecycle(content) {
  const box = el("div", `a2ui-state ${content.status ?? "building"}`);
  if (content.status === "failed") {
    box.append(el("strong", "", "Couldn't generate the UI"), el("div", "dim", content.error ?? ""));
    return box;
  }
  if (content.status === "retrying") {
    box.append(el("span", "", `Retrying generation… (${content.attempt}/${content.maxAttempts} attempts)`));
    const details = el("details");
    details.append(el("summary", "", "validation issues"));
    for (const error of content.errors ?? []) details.append(el("div", "a2ui-error", `[${error.code}] ${error.path}: ${error.message}`));
    box.append(details);
    return box;
  }
  const tokens = typeof content.progressTokens === "number" ? ` (~${content.progressTokens} tokens)` : "";
  box.append(el("span", "", `Building interface${tokens}`));
  return box;
}

// Paints an `a2ui-surface` activity's content into `node` (replacing what was there).
// `onAction(userAction)` is called for a click on a Button with an event action.
export function paintActivity(node, content, onAction) {
  node.replaceChildren();
  node.dataset.status = content?.status ?? (content?.a2ui_operations ? "painted" : "building");
  if (!Array.isArray(content?.a2ui_operations)) {
    node.append(lifecycle(content ?? {}));
    return;
  }
  for (const surface of surfacesOf(content.a2ui_operations).values()) {
    const box = el("div", "a2ui-surface");
    box.dataset.surfaceId = surface.surfaceId;
    box.append(paint(surface, "root", "", { depth: 0, onAction }));
    node.append(box);
  }
}

// The activity a tool message keeps for a reload (metadata."agui-lambda".activity), if it is a
// surface.
export function keptSurface(message) {
  const kept = message.metadata?.["agui-lambda"]?.activity;
  if (kept?.activityType !== ACTIVITY_TYPE) return null;
  return { id: kept.messageId, role: "activity", activityType: ACTIVITY_TYPE, content: kept.content };
}
