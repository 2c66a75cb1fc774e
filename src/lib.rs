//! agui-lambda: an AG-UI agent server that runs as one AWS Lambda function with a streaming
//! Function URL, or as a local HTTP server. Dependencies point one way:
//! `api` → `agent` → {`protocol`, `store`, `model`}.

pub mod agent;
pub mod api;
pub mod config;
pub mod model;
pub mod protocol;
pub mod startup;
pub mod store;
pub mod telemetry;

/// The layering above, checked on the source: which module may name which.
#[cfg(test)]
mod layering {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// Every `crate::<module>` named in the non-test part of the source file or tree at `path`.
    fn named_modules(path: &Path, found: &mut BTreeSet<String>) {
        if path.is_dir() {
            for entry in std::fs::read_dir(path).unwrap() {
                named_modules(&entry.unwrap().path(), found);
            }
            return;
        }
        let is_code = path.extension().is_some_and(|ext| ext == "rs")
            && !path.to_string_lossy().ends_with("tests.rs");
        if !is_code || !path.is_file() {
            return;
        }
        let source = std::fs::read_to_string(path).unwrap();
        let code = source.split("#[cfg(test)]").next().unwrap_or_default();
        for (index, _) in code.match_indices("crate::") {
            let rest = &code[index + "crate::".len()..];
            let name = rest
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or_default();
            found.insert(name.to_owned());
        }
    }

    #[test]
    fn modules_depend_one_way() {
        let allowed: BTreeMap<&str, &[&str]> = BTreeMap::from([
            ("api", &["agent", "protocol", "store"][..]),
            ("agent", &["protocol", "store", "model"][..]),
            ("model", &["protocol"][..]),
            ("store", &["protocol"][..]),
            ("protocol", &[][..]),
            ("telemetry", &[][..]),
            ("config", &["agent", "protocol"][..]),
        ]);
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for (module, may_name) in allowed {
            let mut found = BTreeSet::new();
            named_modules(&src.join(module), &mut found);
            named_modules(&src.join(format!("{module}.rs")), &mut found);
            found.remove(module);
            let extra: Vec<&String> = found
                .iter()
                .filter(|name| !may_name.contains(&name.as_str()))
                .collect();
            assert!(extra.is_empty(), "{module} names {extra:?}");
        }
    }
}
