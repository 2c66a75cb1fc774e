//! The crate's module files as the layering test reads them: each file's module path, the paths
//! its code names (comments and string literals left out) and, for each, the module file that
//! defines what it names, followed through `use` re-exports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from the crate root (`["agent", "run"]`); the root's is empty.
pub(super) type ModPath = Vec<String>;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Str(String),
    Punct(char),
}

/// One module file.
struct ModFile {
    /// The module whose node it is: its own, or for a file of tests (`#[cfg(test)] mod tests;`)
    /// its parent's, whose arrows its tests keep.
    owner: ModPath,
    /// Relative to `src/`, as the test reports it.
    shown: String,
    tokens: Vec<Token>,
    /// The modules it declares at its top level (`mod x;` and `mod x { … }`).
    children: BTreeSet<String>,
    /// What its top-level `use` declarations bind, each name to the path it stands for.
    bindings: BTreeMap<String, ModPath>,
}

/// One path a file's code names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Reference {
    /// The node that names it (a file of tests counts as its parent).
    pub(super) from: ModPath,
    /// The module file it is written in.
    pub(super) file: ModPath,
    /// The module file the path is written through (`crate::agent::run::X` is `agent/run.rs`
    /// even when `run.rs` only re-exports `X`).
    pub(super) written: ModPath,
    /// The module file that defines what the path names.
    pub(super) defined: ModPath,
}

/// The module files of a crate, from its root `lib.rs` down its `mod` declarations.
pub(super) struct SourceTree {
    files: BTreeMap<ModPath, ModFile>,
}

impl SourceTree {
    /// The crate whose sources are in `src`.
    pub(super) fn read(src: &Path) -> Self {
        Self::load(&|file: &Path| std::fs::read_to_string(src.join(file)).ok())
    }

    /// A crate given as (path under `src/`, source) pairs, for the test's own examples.
    pub(super) fn from_sources(sources: &[(&str, &str)]) -> Self {
        let sources: BTreeMap<PathBuf, String> = sources
            .iter()
            .map(|(path, source)| (PathBuf::from(path), (*source).to_owned()))
            .collect();
        Self::load(&|file: &Path| sources.get(file).cloned())
    }

    fn load(read: &dyn Fn(&Path) -> Option<String>) -> Self {
        let mut tree = Self {
            files: BTreeMap::new(),
        };
        tree.visit(
            (Vec::new(), Vec::new()),
            PathBuf::from("lib.rs"),
            true,
            read,
        );
        for module in tree.files.keys().cloned().collect::<Vec<_>>() {
            let bindings = tree.bindings_of(&module);
            if let Some(file) = tree.files.get_mut(&module) {
                file.bindings = bindings;
            }
        }
        tree
    }

    /// Reads `file` as `module` (of node `owner`) and, through its `mod` declarations, its
    /// children.
    fn visit(
        &mut self,
        (module, owner): (ModPath, ModPath),
        file: PathBuf,
        mod_rs: bool,
        read: &dyn Fn(&Path) -> Option<String>,
    ) {
        let Some(source) = read(&file) else {
            return;
        };
        let tokens = lex(&source);
        let parent = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let own_dir = if mod_rs {
            parent.clone()
        } else {
            parent.join(file.file_stem().unwrap_or_default())
        };
        let declared = declared_modules(&tokens);
        let children = declared
            .iter()
            .filter(|declared| declared.inline.is_empty())
            .map(|declared| declared.name.clone())
            .collect();
        self.files.insert(
            module.clone(),
            ModFile {
                owner: owner.clone(),
                shown: file.to_string_lossy().replace('\\', "/"),
                tokens,
                children,
                bindings: BTreeMap::new(),
            },
        );
        for declared in declared.into_iter().filter(|declared| declared.file) {
            let mut child = module.clone();
            child.extend(declared.inline.iter().cloned());
            child.push(declared.name.clone());
            // A file of tests keeps its parent's arrows, and so do the files its tests include.
            let child_owner = if declared.cfg_test || owner != module {
                owner.clone()
            } else {
                child.clone()
            };
            let child = (child, child_owner);
            if let Some(path) = declared.path_attr {
                let path = parent.join(path);
                let mod_rs = path.file_name().is_some_and(|name| name == "mod.rs");
                self.visit(child, path, mod_rs, read);
                continue;
            }
            let dir = declared
                .inline
                .iter()
                .fold(own_dir.clone(), |dir, name| dir.join(name));
            let flat = dir.join(format!("{}.rs", declared.name));
            if read(&flat).is_some() {
                self.visit(child, flat, false, read);
            } else {
                self.visit(child, dir.join(&declared.name).join("mod.rs"), true, read);
            }
        }
    }

    /// What `module`'s top-level `use` declarations bind.
    fn bindings_of(&self, module: &ModPath) -> BTreeMap<String, ModPath> {
        let Some(file) = self.files.get(module) else {
            return BTreeMap::new();
        };
        let mut bindings = BTreeMap::new();
        let scopes = Scopes::of(&file.tokens);
        for at in 0..file.tokens.len() {
            if !scopes.at(at).is_empty() || file.tokens[at] != Token::Ident("use".to_owned()) {
                continue;
            }
            let mut named = Vec::new();
            if let Some(start) = self.path_start(file, module, &[], at + 1, &BTreeMap::new()) {
                tree(&file.tokens, start.1, start.0, &mut named);
            }
            for (path, name) in named {
                if name != "*" {
                    bindings.insert(name, path);
                }
            }
        }
        bindings
    }

    /// Where a path that begins at `tokens[at]` starts from, and the token after its first
    /// name's `::`; `None` when it is not a path into this crate.
    fn path_start(
        &self,
        file: &ModFile,
        module: &ModPath,
        scope: &[String],
        at: usize,
        bindings: &BTreeMap<String, ModPath>,
    ) -> Option<(ModPath, usize)> {
        let Some(Token::Ident(first)) = file.tokens.get(at) else {
            return None;
        };
        if file.tokens.get(at + 1) != Some(&Token::PathSep)
            || (at > 0 && file.tokens.get(at - 1) == Some(&Token::PathSep))
        {
            return None;
        }
        let mut here = module.clone();
        here.extend(scope.iter().cloned());
        let base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => here,
            "super" => here[..here.len().saturating_sub(1)].to_vec(),
            name if scope.is_empty() && file.children.contains(name) => {
                let mut child = here;
                child.push(name.to_owned());
                child
            }
            name if scope.is_empty() => bindings.get(name)?.clone(),
            _ => return None,
        };
        Some((base, at + 2))
    }

    /// Every path each module file's code names into this crate.
    pub(super) fn references(&self) -> Vec<Reference> {
        let mut references = Vec::new();
        for (module, file) in &self.files {
            let mut skip_to = 0;
            let scopes = Scopes::of(&file.tokens);
            for at in 0..file.tokens.len() {
                if at < skip_to {
                    continue;
                }
                let Some((base, start)) =
                    self.path_start(file, module, scopes.at(at), at, &file.bindings)
                else {
                    continue;
                };
                let mut named = Vec::new();
                skip_to = tree(&file.tokens, start, base, &mut named);
                for (path, _) in named {
                    references.push(Reference {
                        from: file.owner.clone(),
                        file: module.clone(),
                        written: self.file_of(&path),
                        defined: self.defining_file(&path),
                    });
                }
            }
        }
        references
    }

    /// The module file `path` is written through: its longest prefix that is a module file.
    pub(super) fn file_of(&self, path: &[String]) -> ModPath {
        (0..=path.len())
            .rev()
            .map(|len| path[..len].to_vec())
            .find(|prefix| self.files.contains_key(prefix))
            .unwrap_or_default()
    }

    /// The module file that defines what `path` names: its file, followed through that file's
    /// `use` bindings while the next name is one of them.
    pub(super) fn defining_file(&self, path: &[String]) -> ModPath {
        let mut path = path.to_vec();
        for _ in 0..32 {
            let file = self.file_of(&path);
            let Some(next) = path.get(file.len()) else {
                return file;
            };
            match self.files.get(&file).and_then(|f| f.bindings.get(next)) {
                Some(target) if target.as_slice() != &path[..=file.len()] => {
                    let mut followed = target.clone();
                    followed.extend_from_slice(&path[file.len() + 1..]);
                    path = followed;
                }
                _ => return file,
            }
        }
        self.file_of(&path)
    }

    /// The module files, by module path.
    pub(super) fn modules(&self) -> impl Iterator<Item = &ModPath> {
        self.files.keys()
    }

    /// How the test shows a module file: its path under `src/`.
    pub(super) fn shown(&self, module: &ModPath) -> String {
        self.files
            .get(module)
            .map_or_else(|| module.join("::"), |file| file.shown.clone())
    }
}

/// One `mod` declaration.
struct Declared {
    /// The inline modules it sits in, outermost first.
    inline: Vec<String>,
    name: String,
    /// `mod name;`: a file of its own.
    file: bool,
    /// Its `#[path = "…"]`.
    path_attr: Option<String>,
    /// Under `#[cfg(test)]`.
    cfg_test: bool,
}

/// The `mod` declarations of a file, inline ones included.
fn declared_modules(tokens: &[Token]) -> Vec<Declared> {
    let mut declared = Vec::new();
    let mut path_attr = None;
    let mut cfg_test = false;
    let scopes = Scopes::of(tokens);
    for at in 0..tokens.len() {
        if let [
            Token::Punct('#'),
            Token::Punct('['),
            Token::Ident(attr),
            Token::Punct('('),
            Token::Ident(cfg),
            Token::Punct(')'),
            ..,
        ] = &tokens[at..tokens.len().min(at + 6)]
            && attr == "cfg"
            && cfg == "test"
        {
            cfg_test = true;
        }
        if let [
            Token::Punct('#'),
            Token::Punct('['),
            Token::Ident(attr),
            Token::Punct('='),
            Token::Str(path),
            ..,
        ] = &tokens[at..tokens.len().min(at + 5)]
            && attr == "path"
        {
            path_attr = Some(path.clone());
        }
        if let [
            Token::Ident(keyword),
            Token::Ident(name),
            Token::Punct(end @ (';' | '{')),
        ] = &tokens[at..tokens.len().min(at + 3)]
            && keyword == "mod"
        {
            declared.push(Declared {
                inline: scopes.at(at).to_vec(),
                name: name.clone(),
                file: *end == ';',
                path_attr: path_attr.take(),
                cfg_test: std::mem::take(&mut cfg_test),
            });
        } else if matches!(tokens[at], Token::Punct(';' | '}')) {
            // An attribute holds for the next item only.
            path_attr = None;
            cfg_test = false;
        }
    }
    declared
}

/// The inline modules (`mod tests { … }`) each token sits in, outermost first.
struct Scopes {
    of_token: Vec<usize>,
    scopes: Vec<Vec<String>>,
}

impl Scopes {
    fn of(tokens: &[Token]) -> Self {
        let mut scopes = vec![Vec::new()];
        let mut of_token = Vec::with_capacity(tokens.len());
        let mut open: Vec<(String, usize)> = Vec::new();
        let mut depth = 0_usize;
        for (at, token) in tokens.iter().enumerate() {
            of_token.push(scopes.len() - 1);
            let before = open.len();
            match token {
                Token::Punct('{') => {
                    if let (Some(Token::Ident(keyword)), Some(Token::Ident(name))) = (
                        at.checked_sub(2).map(|i| &tokens[i]),
                        at.checked_sub(1).map(|i| &tokens[i]),
                    ) && keyword == "mod"
                    {
                        open.push((name.clone(), depth));
                    }
                    depth += 1;
                }
                Token::Punct('}') => {
                    depth = depth.saturating_sub(1);
                    if open.last().is_some_and(|(_, opened)| *opened == depth) {
                        open.pop();
                    }
                }
                _ => {}
            }
            if open.len() != before {
                scopes.push(open.iter().map(|(name, _)| name.clone()).collect());
            }
        }
        Self { of_token, scopes }
    }

    fn at(&self, token: usize) -> &[String] {
        &self.scopes[self.of_token[token]]
    }
}

/// The paths a path or `use` tree names from `tokens[at]` on, below `path`, each with the name
/// it binds: `a::{b, c::d as e}` gives `…::a::b` (as `b`) and `…::a::c::d` (as `e`). Returns
/// the index past it.
fn tree(
    tokens: &[Token],
    mut at: usize,
    mut path: ModPath,
    out: &mut Vec<(ModPath, String)>,
) -> usize {
    loop {
        match tokens.get(at) {
            Some(Token::Punct('{')) => {
                at += 1;
                loop {
                    match tokens.get(at) {
                        Some(Token::Punct('}')) | None => return at + 1,
                        Some(Token::Punct(',')) => at += 1,
                        Some(_) => at = tree(tokens, at, path.clone(), out),
                    }
                }
            }
            Some(Token::Punct('*')) => {
                out.push((path, "*".to_owned()));
                return at + 1;
            }
            Some(Token::Ident(name)) => {
                match name.as_str() {
                    "super" => {
                        path.pop();
                    }
                    "self" => {}
                    _ => path.push(name.clone()),
                }
                at += 1;
                if tokens.get(at) == Some(&Token::PathSep) {
                    at += 1;
                    continue;
                }
                let mut bound = path.last().cloned().unwrap_or_default();
                if let [Token::Ident(keyword), Token::Ident(alias), ..] =
                    &tokens[at.min(tokens.len())..tokens.len().min(at + 2)]
                    && keyword == "as"
                {
                    bound = alias.clone();
                    at += 2;
                }
                out.push((path, bound));
                return at;
            }
            _ => {
                let bound = path.last().cloned().unwrap_or_default();
                out.push((path, bound));
                return at;
            }
        }
    }
}

/// Rust source as tokens, comments left out and string literals kept whole (so that neither
/// names anything).
fn lex(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    while let Some(&c) = chars.get(at) {
        let next = chars.get(at + 1).copied();
        if c.is_whitespace() {
            at += 1;
        } else if c == '/' && next == Some('/') {
            while chars.get(at).is_some_and(|c| *c != '\n') {
                at += 1;
            }
        } else if c == '/' && next == Some('*') {
            at = past_block_comment(&chars, at);
        } else if let Some((text, end)) = string_at(&chars, at) {
            tokens.push(Token::Str(text));
            at = end;
        } else if c == '\'' {
            at = past_char_literal(&chars, at);
        } else if c.is_alphanumeric() || c == '_' {
            let start = at;
            while chars
                .get(at)
                .is_some_and(|c| c.is_alphanumeric() || *c == '_')
            {
                at += 1;
            }
            tokens.push(Token::Ident(chars[start..at].iter().collect()));
        } else if c == ':' && next == Some(':') {
            tokens.push(Token::PathSep);
            at += 2;
        } else {
            tokens.push(Token::Punct(c));
            at += 1;
        }
    }
    tokens
}

fn past_block_comment(chars: &[char], mut at: usize) -> usize {
    let mut depth = 0_usize;
    while at < chars.len() {
        match (chars[at], chars.get(at + 1)) {
            ('/', Some('*')) => {
                depth += 1;
                at += 2;
            }
            ('*', Some('/')) => {
                depth -= 1;
                at += 2;
                if depth == 0 {
                    return at;
                }
            }
            _ => at += 1,
        }
    }
    at
}

/// A string literal starting at `at` (`"…"`, `b"…"`, `r#"…"#`, `br"…"`): its text and the index
/// past it.
fn string_at(chars: &[char], at: usize) -> Option<(String, usize)> {
    let mut open = at;
    if chars.get(open) == Some(&'b') {
        open += 1;
    }
    if chars.get(open) == Some(&'r') {
        let hashes = chars[open + 1..].iter().take_while(|c| **c == '#').count();
        let quote = open + 1 + hashes;
        if chars.get(quote) != Some(&'"') {
            return None;
        }
        let body = &chars[quote + 1..];
        let len = body
            .windows(hashes + 1)
            .position(|window| window[0] == '"' && window[1..].iter().all(|c| *c == '#'))
            .unwrap_or(body.len());
        let text: String = body[..len].iter().collect();
        let end = quote + 1 + len + 1 + hashes;
        return Some((text, end));
    }
    if chars.get(open) != Some(&'"') {
        return None;
    }
    let mut end = open + 1;
    let mut text = String::new();
    while let Some(&c) = chars.get(end) {
        end += 1;
        match c {
            '"' => break,
            '\\' => {
                text.push(c);
                if let Some(&escaped) = chars.get(end) {
                    text.push(escaped);
                    end += 1;
                }
            }
            _ => text.push(c),
        }
    }
    Some((text, end))
}

/// Past a character literal at `at`, or past the quote of a lifetime.
fn past_char_literal(chars: &[char], at: usize) -> usize {
    if chars.get(at + 1) == Some(&'\\') {
        let close = chars[at + 2..].iter().skip(1).position(|c| *c == '\'');
        return close.map_or(chars.len(), |close| at + 2 + 1 + close + 1);
    }
    if chars.get(at + 2) == Some(&'\'') {
        return at + 3;
    }
    at + 1
}
