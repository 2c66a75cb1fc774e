//! The layering between module files, checked on the source: no circle anywhere in `src/`, inside
//! a folder too, and `agent/` read one way (its parts, then the run loop, then the loop's
//! clients, which see the loop only through `agent/run.rs`).
//!
//! A file's edges are what its code names (`crate::…`, `super::…`, `self::…`, a child module's
//! or a `use`d name's path), each resolved to the module file that defines it through `use`
//! re-exports. What a file names of its own ancestors is no edge: a folder's `mod.rs` (or
//! `run.rs` for `run/`) declares and assembles its children, and they use what it defines.

use super::graph::{ModPath, Reference, SourceTree};
use std::collections::{BTreeMap, BTreeSet};

/// The layers of `agent/`, lowest first: a file may name its own layer and those below (without
/// a circle), never one above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    /// What the run loop is built from: the thread, a turn, tools, context, memory, approvals,
    /// the live log, the profiles, and delegation (`subagents/`: a child's wire and records,
    /// remote AG-UI and A2A children), which is a step of the loop.
    Part,
    /// The run loop: `run.rs` and `run/`.
    Loop,
    /// The loop's clients: starting a run, continuing one in another runner, and a profile of
    /// ours run as a sub-agent. They name the loop through `agent/run.rs` only.
    Client,
}

/// The layer of each entry of `agent/` (a file, or a folder with its file); `agent/mod.rs`, the
/// folder's root, is above them all.
fn agent_layer(entry: &str) -> Option<Layer> {
    match entry {
        "run" => Some(Layer::Loop),
        "start" | "continuation" | "profile_child" => Some(Layer::Client),
        "a2a_tasks" | "approval" | "background" | "context" | "detached" | "history_day"
        | "live" | "memory" | "profiles" | "spans" | "subagents" | "suggest" | "thread"
        | "threads" | "tools" | "turn" => Some(Layer::Part),
        _ => None,
    }
}

fn is_ancestor(ancestor: &[String], of: &[String]) -> bool {
    of.starts_with(ancestor)
}

/// The edges between module files: `from` names something `to` defines, `to` neither `from`
/// itself nor one of its ancestors.
fn edges(references: &[Reference]) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for reference in references {
        if !is_ancestor(&reference.defined, &reference.from) {
            edges
                .entry(reference.from.clone())
                .or_default()
                .insert(reference.defined.clone());
        }
    }
    edges
}

/// Every circle among module files: each strongly connected component of more than one file,
/// as the edges inside it (`a.rs -> b.rs`).
pub(super) fn circles(tree: &SourceTree) -> Vec<Vec<String>> {
    let edges = edges(&tree.references());
    let nodes: Vec<&ModPath> = tree.modules().collect();
    let index: BTreeMap<&ModPath, usize> = nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let next: Vec<Vec<usize>> = nodes
        .iter()
        .map(|module| {
            edges
                .get(*module)
                .into_iter()
                .flatten()
                .filter_map(|to| index.get(to).copied())
                .collect()
        })
        .collect();
    let (nodes, next) = (&nodes, &next);
    components(next)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let mut inside: Vec<String> = component
                .iter()
                .flat_map(|&from| {
                    next[from]
                        .iter()
                        .filter(|to| component.contains(to))
                        .map(move |&to| {
                            format!("{} -> {}", tree.shown(nodes[from]), tree.shown(nodes[to]))
                        })
                })
                .collect();
            inside.sort();
            inside
        })
        .collect()
}

/// The strongly connected components of a graph (Tarjan's algorithm).
fn components(next: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        next: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        found: Vec<Vec<usize>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, node: usize) {
            self.index[node] = Some(self.counter);
            self.low[node] = self.counter;
            self.counter += 1;
            self.stack.push(node);
            self.on_stack[node] = true;
            for &to in &self.next[node] {
                match self.index[to] {
                    None => {
                        self.visit(to);
                        self.low[node] = self.low[node].min(self.low[to]);
                    }
                    Some(index) if self.on_stack[to] => self.low[node] = self.low[node].min(index),
                    Some(_) => {}
                }
            }
            if Some(self.low[node]) == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                self.found.push(component);
            }
        }
    }
    let mut walk = Walk {
        next,
        index: vec![None; next.len()],
        low: vec![0; next.len()],
        on_stack: vec![false; next.len()],
        stack: Vec::new(),
        counter: 0,
        found: Vec::new(),
    };
    for node in 0..next.len() {
        if walk.index[node].is_none() {
            walk.visit(node);
        }
    }
    walk.found
}

/// What breaks `agent/`'s layering: a file in no layer, a file naming one in a layer above its
/// own, a client naming the run loop's inside (a file under `agent/run/`), and a module outside
/// `agent/` naming the run loop at all (it goes through `agent`'s own re-exports).
pub(super) fn agent_breaches(tree: &SourceTree) -> Vec<String> {
    let in_agent = |module: &ModPath| module.first().is_some_and(|first| first == "agent");
    // A file under `agent/`, the folder's root (`agent/mod.rs`) aside.
    let agent = |module: &ModPath| module.len() >= 2 && in_agent(module);
    let in_loop = |module: &ModPath| module.len() >= 2 && module[..2] == ["agent", "run"];
    let mut breaches = BTreeSet::new();
    for module in tree.modules().filter(|module| agent(module)) {
        if agent_layer(&module[1]).is_none() {
            breaches.insert(format!(
                "{}: in no layer of agent/ (give `{}` one in the layering test)",
                tree.shown(module),
                module[1]
            ));
        }
    }
    for reference in tree.references() {
        let (from, shown_from) = (&reference.from, tree.shown(&reference.from));
        if agent(from) && agent(&reference.defined) && !is_ancestor(&reference.defined, from) {
            let (own, named) = (agent_layer(&from[1]), agent_layer(&reference.defined[1]));
            if let (Some(own), Some(named)) = (own, named)
                && named > own
            {
                breaches.insert(format!(
                    "{shown_from} ({own:?}) names {} ({named:?}), a layer above it",
                    tree.shown(&reference.defined)
                ));
            }
        }
        let written = &reference.written;
        if in_loop(written) && !in_loop(from) {
            if !in_agent(from) {
                breaches.insert(format!(
                    "{shown_from} names the run loop ({}); outside agent/ it is reached through `crate::agent`'s re-exports",
                    tree.shown(written)
                ));
            } else if written.len() > 2 {
                breaches.insert(format!(
                    "{shown_from} names the run loop's inside ({}); its face is agent/run.rs",
                    tree.shown(written)
                ));
            }
        }
    }
    breaches.into_iter().collect()
}

/// This crate's sources, read once for the tests that check them.
fn this_crate() -> &'static SourceTree {
    static TREE: std::sync::OnceLock<SourceTree> = std::sync::OnceLock::new();
    TREE.get_or_init(|| {
        SourceTree::read(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
    })
}

#[test]
fn no_module_file_is_in_a_circle() {
    let circles = circles(this_crate());
    assert!(
        circles.is_empty(),
        "circles between module files: {circles:#?}"
    );
}

#[test]
fn the_agent_reads_one_way() {
    let breaches = agent_breaches(this_crate());
    assert!(breaches.is_empty(), "{breaches:#?}");
}

#[test]
fn a_circle_is_caught_inside_a_folder_through_a_re_export_and_in_tests() {
    let clean = [
        ("lib.rs", "mod shop;\nmod util;\n"),
        (
            "shop/mod.rs",
            "mod cart;\nmod price;\npub(crate) use price::Price;\npub(crate) struct Shop;\nfn total() { cart::sum(); }\n",
        ),
        // A child naming its parent's own item is no edge; comments and strings name nothing.
        (
            "shop/cart.rs",
            "use super::{Price, Shop};\n// crate::shop::price\nconst S: &str = \"use super::price::X;\";\npub(crate) fn sum() {}\n",
        ),
        (
            "shop/price.rs",
            "use crate::util::round;\npub(crate) struct Price;\n",
        ),
        ("util.rs", "pub(crate) fn round() {}\n"),
    ];
    assert!(circles(&SourceTree::from_sources(&clean)).is_empty());

    // `price` names `cart`, and `cart` names `price` through `shop`'s re-export.
    let mut sibling = clean;
    sibling[3].1 = "pub(crate) struct Price;\nfn f() { super::cart::sum(); }\n";
    assert_eq!(
        circles(&SourceTree::from_sources(&sibling)),
        [[
            "shop/cart.rs -> shop/price.rs",
            "shop/price.rs -> shop/cart.rs"
        ]]
    );

    // A file of `util`'s tests (`#[path]`) keeps `util`'s arrows: naming `shop` closes a circle.
    let mut in_tests = clean;
    in_tests[4].1 =
        "pub(crate) fn round() {}\n#[cfg(test)]\n#[path = \"util_tests.rs\"]\nmod tests;\n";
    let with_tests: Vec<(&str, &str)> = in_tests
        .into_iter()
        .chain([("util_tests.rs", "use crate::shop::{self, Shop};\n")])
        .collect();
    assert_eq!(
        circles(&SourceTree::from_sources(&with_tests)),
        [[
            "shop/cart.rs -> shop/price.rs",
            "shop/mod.rs -> shop/cart.rs",
            "shop/mod.rs -> shop/price.rs",
            "shop/price.rs -> util.rs",
            "util.rs -> shop/mod.rs",
        ]]
    );
}

#[test]
fn a_part_naming_the_loop_and_a_client_naming_its_inside_are_caught() {
    let sources = [
        ("lib.rs", "mod agent;\nmod api;\n"),
        (
            "agent/mod.rs",
            "mod continuation;\nmod run;\nmod turn;\npub(crate) use run::PreparedRun;\npub(crate) struct Agent;\n",
        ),
        (
            "agent/run.rs",
            "mod steps;\npub(crate) use steps::Step;\npub(crate) struct PreparedRun(super::Agent);\n",
        ),
        (
            "agent/run/steps.rs",
            "use crate::agent::turn::Turn;\npub(crate) struct Step;\n",
        ),
        ("agent/turn.rs", "pub(crate) struct Turn;\n"),
        (
            "agent/continuation.rs",
            "use super::run::{PreparedRun, Step};\n",
        ),
        ("api.rs", "use crate::agent::PreparedRun;\n"),
    ];
    assert!(agent_breaches(&SourceTree::from_sources(&sources)).is_empty());

    let mut wrong = sources;
    // A part names the loop through the root's re-export; a client names a file of the loop;
    // a module outside agent/ names the loop.
    wrong[4].1 = "pub(crate) struct Turn(crate::agent::PreparedRun);\n";
    wrong[5].1 = "use super::run::steps::Step;\n";
    wrong[6].1 = "use crate::agent::run::PreparedRun;\n";
    assert_eq!(
        agent_breaches(&SourceTree::from_sources(&wrong)),
        [
            "agent/continuation.rs names the run loop's inside (agent/run/steps.rs); its face is agent/run.rs",
            "agent/turn.rs (Part) names agent/run.rs (Loop), a layer above it",
            "api.rs names the run loop (agent/run.rs); outside agent/ it is reached through `crate::agent`'s re-exports",
        ]
    );
}

/// The house's limit on a file's length (`~600` is the aim).
#[test]
fn no_file_in_src_is_over_800_lines() {
    fn long_files(dir: &std::path::Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                long_files(&path, found);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let lines = std::fs::read_to_string(&path).unwrap().lines().count();
                if lines > 800 {
                    found.push(format!("{} ({lines} lines)", path.display()));
                }
            }
        }
    }
    let mut found = Vec::new();
    long_files(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut found,
    );
    assert!(found.is_empty(), "{found:?}");
}
