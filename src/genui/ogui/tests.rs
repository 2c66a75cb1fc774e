use super::*;
use proptest::prelude::*;

/// The activity's content after each piece of `pieces` and the call's end, and how many
/// operations each piece produced.
fn play(pieces: &[&str]) -> (Value, Vec<usize>) {
    let mut content = opening_content();
    let mut stream = OguiStream::new();
    let mut counts = Vec::new();
    for piece in pieces {
        let ops = stream.push(piece);
        counts.push(ops.len());
        apply(&mut content, ops);
    }
    apply(&mut content, stream.finish());
    (content, counts)
}

fn apply(content: &mut Value, ops: Vec<PatchOperation>) {
    for op in &ops {
        let PatchOperation::Add(add) = op else {
            panic!("not an add: {op:?}");
        };
        assert!(!add.value.is_null(), "a null value at {}", add.path);
    }
    json_patch::patch(content, &ops).unwrap_or_else(|err| panic!("{err}: {ops:?}"));
}

/// The content as the renderer reads it: the HTML pieces joined.
fn joined(mut content: Value) -> Value {
    if let Some(pieces) = content.get("html").and_then(Value::as_array) {
        let html: String = pieces.iter().filter_map(Value::as_str).collect();
        content["html"] = Value::String(html);
    }
    content
}

#[test]
fn fields_become_adds_in_the_order_they_arrive() {
    let mut stream = OguiStream::new();
    let ops = |pieces: Vec<PatchOperation>| -> Vec<String> {
        pieces
            .iter()
            .map(|op| match op {
                PatchOperation::Add(add) => format!("{} {}", add.path, add.value),
                other => format!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(
        ops(stream.push(r#"{"initialHeight": 240, "placeholderMessages": ["Sketching", "Styl"#)),
        [
            "/initialHeight 240",
            "/placeholderMessages []",
            r#"/placeholderMessages/- "Sketching""#
        ]
    );
    assert_eq!(
        ops(stream.push(r#"ing"], "css": ".card{color:red}", "html": "<div class=\"ca"#)),
        [
            r#"/placeholderMessages/- "Styling""#,
            r#"/css ".card{color:red}""#,
            "/cssComplete true",
            "/html []",
            r#"/html/- "<div class=\"ca""#,
        ]
    );
    assert_eq!(
        ops(stream.push(r#"rd\">Hi</div>", "jsFunctions": "function go(){}","#)),
        [
            r#"/html/- "rd\">Hi</div>""#,
            "/htmlComplete true",
            r#"/jsFunctions "function go(){}""#,
            "/jsFunctionsComplete true",
        ]
    );
    assert_eq!(
        ops(stream.push(r#" "jsExpressions": ["go()"], "extra": {"html": "no"}}"#)),
        [
            "/jsExpressions []",
            r#"/jsExpressions/- "go()""#,
            "/jsExpressionsComplete true",
        ]
    );
    assert_eq!(ops(stream.finish()), ["/generating false"]);
}

#[test]
fn nulls_and_values_of_the_wrong_kind_are_never_sent() {
    let (content, _) = play(&[
        r#"{"initialHeight": null, "css": null, "jsFunctions": 7, "html": null, "#,
        r#""placeholderMessages": [null, 3, "ok"], "jsExpressions": null}"#,
    ]);
    assert_eq!(
        content,
        json!({"generating": false, "placeholderMessages": ["ok"]})
    );
}

#[test]
fn an_empty_html_completes_without_pieces() {
    let (content, _) = play(&[r#"{"html": ""}"#]);
    assert_eq!(content, json!({"generating": false, "htmlComplete": true}));
}

#[test]
fn broken_arguments_stop_the_patches_and_generation_still_ends() {
    let (content, counts) = play(&[r#"{"css": "a", "html": "<p>"#, r#"x"}} junk "#, r#""more""#]);
    assert_eq!(
        joined(content),
        json!({"generating": false, "css": "a", "cssComplete": true, "html": "<p>x", "htmlComplete": true})
    );
    assert_eq!(counts[2], 0);
}

/// `generateSandboxedUi`'s arguments as a model might write them.
#[derive(Debug, Clone)]
struct Args {
    initial_height: Option<u32>,
    placeholder_messages: Option<Vec<String>>,
    css: Option<String>,
    html: Option<String>,
    js_functions: Option<String>,
    js_expressions: Option<Vec<String>>,
}

impl Args {
    /// The members in `order` (a permutation of 0..6), absent ones left out.
    fn to_json(&self, order: &[usize]) -> String {
        let mut members = Vec::new();
        for index in order {
            let member = match index {
                0 => self.initial_height.map(|h| ("initialHeight", json!(h))),
                1 => self
                    .placeholder_messages
                    .as_ref()
                    .map(|m| ("placeholderMessages", json!(m))),
                2 => self.css.as_ref().map(|css| ("css", json!(css))),
                3 => self.html.as_ref().map(|html| ("html", json!(html))),
                4 => self
                    .js_functions
                    .as_ref()
                    .map(|js| ("jsFunctions", json!(js))),
                _ => self
                    .js_expressions
                    .as_ref()
                    .map(|js| ("jsExpressions", json!(js))),
            };
            if let Some((key, value)) = member {
                members.push(format!("{}: {value}", json!(key)));
            }
        }
        format!("{{{}}}", members.join(", "))
    }

    /// The activity's content once the whole call has been read, HTML joined.
    fn expected(&self) -> Value {
        let mut content = json!({"generating": false});
        if let Some(height) = self.initial_height {
            content["initialHeight"] = json!(height);
        }
        if let Some(messages) = &self.placeholder_messages {
            content["placeholderMessages"] = json!(messages);
        }
        if let Some(css) = &self.css {
            content["css"] = json!(css);
            content["cssComplete"] = json!(true);
        }
        if let Some(html) = &self.html {
            if !html.is_empty() {
                content["html"] = json!(html);
            }
            content["htmlComplete"] = json!(true);
        }
        if let Some(js) = &self.js_functions {
            content["jsFunctions"] = json!(js);
            content["jsFunctionsComplete"] = json!(true);
        }
        if let Some(js) = &self.js_expressions {
            content["jsExpressions"] = json!(js);
            content["jsExpressionsComplete"] = json!(true);
        }
        content
    }
}

/// Every character outside ASCII as `\u` escapes (surrogate pairs past the BMP), as some
/// providers write it.
fn ascii_escaped(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

fn text() -> impl Strategy<Value = String> {
    // HTML-ish text with quotes, backslashes, controls and characters past the BMP.
    proptest::string::string_regex(r#"[<>a-z "\\/\n\t\u{1}é€😀]{0,40}"#).unwrap()
}

fn args() -> impl Strategy<Value = Args> {
    (
        proptest::option::of(0u32..2000),
        proptest::option::of(proptest::collection::vec(text(), 0..4)),
        proptest::option::of(text()),
        proptest::option::of(text()),
        proptest::option::of(text()),
        proptest::option::of(proptest::collection::vec(text(), 0..4)),
    )
        .prop_map(
            |(initial_height, placeholder_messages, css, html, js_functions, js_expressions)| {
                Args {
                    initial_height,
                    placeholder_messages,
                    css,
                    html,
                    js_functions,
                    js_expressions,
                }
            },
        )
}

/// `json` cut at `cuts` (byte offsets moved back to character boundaries).
fn pieces(json: &str, cuts: &[usize]) -> Vec<String> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|cut| {
            let mut cut = cut % (json.len() + 1);
            while !json.is_char_boundary(cut) {
                cut -= 1;
            }
            cut
        })
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in at.into_iter().chain([json.len()]) {
        out.push(json[start..cut].to_owned());
        start = cut;
    }
    out
}

proptest! {
    #[test]
    fn any_split_of_the_arguments_gives_the_same_content(
        args in args(),
        order in Just((0..6).collect::<Vec<usize>>()).prop_shuffle(),
        escaped in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..24),
    ) {
        let json = args.to_json(&order);
        let json = if escaped { ascii_escaped(&json) } else { json };
        let split = pieces(&json, &cuts);
        let split: Vec<&str> = split.iter().map(String::as_str).collect();
        let (whole, _) = play(&[&json]);
        let (streamed, _) = play(&split);
        prop_assert_eq!(joined(streamed), joined(whole.clone()));
        prop_assert_eq!(joined(whole), args.expected());
    }
}
