//! The layer order `lib.rs` states, checked: no module of this crate names
//! one above it. Reads every source file's `crate::` paths (plain ones, and
//! the first names of `use crate::{...}` groups); a name the crate root
//! re-exports counts as the module it comes from, and anything else the
//! root defines sits above every layer.

use std::{collections::BTreeMap, fs, path::Path};

/// Lowest first. A module may use its own layer and those before it.
const LAYERS: &[&[&str]] = &[
    &["clock", "deadline", "random", "metrics", "deployment", "logging", "loopback", "senders"],
    &["storage", "quota"],
    &["protocol"],
    &["sealed"],
    &["handles"],
    &["tasks"],
    &["subscriptions"],
    &["sessions"],
    &["server", "testing", "prelude", "contracts"],
    &["edge"],
    &["settings"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// `text` with its comments left out and its string and character
/// literals emptied: paths are read from code only.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => while chars.next_if(|&n| n != '\n').is_some() {},
            '/' if chars.peek() == Some(&'*') => {
                let mut previous = ' ';
                for n in chars.by_ref() {
                    if previous == '*' && n == '/' {
                        break;
                    }
                    previous = n;
                }
            }
            // Raw strings (`r#"…"#`): to the closing quote and hashes.
            'r' if chars.peek() == Some(&'#') => {
                let hashes = std::iter::from_fn(|| chars.next_if_eq(&'#')).count();
                if chars.next_if_eq(&'"').is_none() {
                    out.push('r');
                    continue;
                }
                let closing: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
                let mut seen = String::new();
                for n in chars.by_ref() {
                    seen.push(n);
                    if seen.ends_with(&closing) {
                        break;
                    }
                }
                out.push_str("\"\"");
            }
            '"' => {
                skip_quoted(&mut chars, '"');
                out.push_str("\"\"");
            }
            // A character literal ('"', '\\'), not a lifetime ('a).
            '\'' => {
                let mut ahead = chars.clone();
                let literal = match ahead.next() {
                    Some('\\') => true,
                    Some(_) => ahead.next() == Some('\''),
                    None => false,
                };
                if literal {
                    skip_quoted(&mut chars, '\'');
                    out.push_str("' '");
                } else {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Past the `quote` that closes a literal, escapes (`\\"`) included.
fn skip_quoted(chars: &mut impl Iterator<Item = char>, quote: char) {
    let mut escaped = false;
    for c in chars {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, c) if c == quote => return,
            _ => {}
        }
    }
}

/// The first names of the paths after each `crate::` in `text`'s code
/// (`$crate::` in macros names the macro's own crate, not a layer).
fn named(text: &str) -> Vec<String> {
    let code = code_only(text);
    let mut names = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].ends_with('$') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The group's top-level entries: `a::b`, `c::{d, e}`, `F`.
            let (mut depth, mut entry) = (0usize, String::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        names.push(std::mem::take(&mut entry));
                        continue;
                    }
                    _ => {}
                }
                entry.push(c);
            }
            names.push(entry);
        } else {
            names.push(rest.to_owned());
        }
    }
    names
        .iter()
        .map(|path| path.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>())
        .filter(|name| !name.is_empty())
        .collect()
}

/// The module each name the crate root re-exports (`pub use module::...`) comes from.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let code = code_only(lib);
    // Attributes and doc comments may stand before a `pub use`.
    for statement in code.split(';').filter_map(|s| s.find("pub use ").map(|at| &s[at + "pub use ".len()..])) {
        let module = statement.split("::").next().unwrap_or("").trim().to_owned();
        let names = statement.rsplit_once("::{").map_or_else(|| statement.rsplit("::").next().unwrap_or(""), |(_, group)| group);
        for name in names.trim_end_matches('}').split(',').map(|n| n.rsplit(" as ").next().unwrap_or(n).trim()) {
            map.insert(name.to_owned(), module.clone());
        }
    }
    map
}

fn sources(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn no_module_uses_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let reexported = reexports(&fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut upward = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let module = relative.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned();
        // The root stands above every layer; this file only reads the others.
        if module == "lib" || module == "layering" {
            continue;
        }
        let own = layer(&module).unwrap_or_else(|| panic!("src/{module} is in no layer: add it to LAYERS here and to the list in lib.rs"));
        let text = fs::read_to_string(file).unwrap();
        // Two steps up from a folder's file can only be read against the
        // folder's place: such paths are written from `crate::`.
        if code_only(&text).contains("super::super") {
            upward.push(format!("{} uses super::super (write crate:: paths)", relative.display()));
        }
        for name in named(&text) {
            let target = reexported.get(&name).cloned().unwrap_or(name);
            match layer(&target) {
                Some(theirs) if theirs <= own => {}
                Some(_) => upward.push(format!("{} uses {target}", relative.display())),
                None => upward.push(format!("{} uses the crate root's {target}", relative.display())),
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(upward.is_empty(), "imports up the layers (lib.rs, 'One folder per concern'):\n{}", upward.join("\n"));
}

#[test]
fn the_reader_sees_every_kind_of_path() {
    let text = "use crate::{clock::Clock, edge::policy::{Mode, Transport}, Principal};\n// crate::edge in a comment\nlet x = crate::tasks::run();\n$crate::server_methods!();";
    assert_eq!(named(text), ["clock", "edge", "Principal", "tasks"]);
    let hidden = "let url = \"https://x\"; let y = crate::sealed::open(); /* crate::edge */ let s = \"crate::edge\";\nlet q = '\"'; let r = r#\"crate::edge \"quoted\"\"#; fn f<'a>(x: &'a str) { crate::handles::get(); }";
    assert_eq!(named(hidden), ["sealed", "handles"], "paths after a URL count; in comments, strings and raw strings they do not");
    let lib = "pub use protocol::context::{CallContext, Principal};\n/// Docs.\n#[doc(inline)]\npub use edge::endpoint::McpEndpoint;";
    let map = reexports(lib);
    assert_eq!((map["Principal"].as_str(), map["McpEndpoint"].as_str()), ("protocol", "edge"));
}

/// The types read from an extension map (`extensions.get::<T>()`,
/// `extensions_mut().remove::<T>()` and the like) in `code`.
fn extension_types(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("extensions") {
        let rest = &code[at + "extensions".len()..];
        let rest = rest.strip_prefix("_mut()").or_else(|| rest.strip_prefix("()")).unwrap_or(rest);
        let Some(rest) = rest.strip_prefix('.') else { continue };
        let Some((_, turbofish)) = rest.split_once("::<").filter(|(method, _)| method.chars().all(|c| c.is_alphanumeric() || c == '_'))
        else {
            continue;
        };
        if let Some((name, _)) = turbofish.split_once('>') {
            found.push(name.rsplit("::").next().unwrap_or(name).to_owned());
        }
    }
    found
}

#[test]
fn a_request_carries_one_scope() {
    // What travels with a request from the edge to the handler is in
    // protocol::scope::RequestScope, where this test and a reader see it:
    // EntryFacts is what an entry point attaches (the edge takes it into
    // the scope first), AnswerAsJson passes between two edge modules,
    // Parts and Rounds are rmcp's context's.
    const ALLOWED: &[&str] = &["RequestScope", "Self", "EntryFacts", "AnswerAsJson", "Parts", "Rounds"];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut loose = Vec::new();
    for file in &files {
        if file.ends_with("layering.rs") {
            continue;
        }
        for name in extension_types(&code_only(&fs::read_to_string(file).unwrap())) {
            if !ALLOWED.contains(&name.as_str()) {
                loose.push(format!("{} reads {name}", file.strip_prefix(&src).unwrap().display()));
            }
        }
    }
    assert!(loose.is_empty(), "request-scope facts outside protocol::scope::RequestScope:\n{}", loose.join("\n"));
    let seen = extension_types("parts.extensions.get::<TaskIdsFilter>(); req.extensions_mut().remove::<crate::x::Marker>(); x.get::<No>()");
    assert_eq!(seen, ["TaskIdsFilter", "Marker"], "the reader finds what it guards against");
}
