//! The layers of the crate: every top-level module of src/ in one layer,
//! imports pointing only to its own layer or the ones below, and no loop.
//! docs/architecture.md says what each layer is; `cargo test --test layers`
//! checks it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, top to bottom, each with its top-level modules (`main` is
/// the binary, src/main.rs). A module may import modules of its own layer
/// and of the layers below it, never of a layer above.
const LAYERS: &[(&str, &[&str])] = &[
    ("commands", &["main", "command", "cli", "jobs", "fuzzing"]),
    ("serve", &["serve"]),
    ("process", &["process"]),
    ("conversations", &["converse"]),
    ("filter loop", &["run"]),
    ("dialect table", &["dialect"]),
    ("translators", &["source"]),
    ("writer", &["agui"]),
    ("validation", &["check"]),
    ("basics", &["base"]),
];

/// An import of one top-level module by another: (importer, imported).
type Edge = (String, String);

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of src/ belongs to (`None`: lib.rs, which
/// only declares them).
fn module_of(path: &Path) -> Option<String> {
    let rel = path.strip_prefix(src()).expect("under src/");
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib").then(|| name.to_owned())
}

/// The source without comments, string literals and character literals
/// (what they say is not an import).
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let ident = |k: usize| k > 0 && (c[k - 1].is_alphanumeric() || c[k - 1] == '_');
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let from = i;
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            keep_lines(&mut out, &c[from..i.min(c.len())]);
        } else if (c[i] == 'r' || (c[i] == 'b' && c.get(i + 1) == Some(&'r'))) && !ident(i) && {
            let mut j = i + if c[i] == 'b' { 2 } else { 1 };
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            c.get(j) == Some(&'"')
        } {
            let from = i;
            let mut j = i + if c[i] == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while c[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            while j < c.len() && !(c[j] == '"' && (1..=hashes).all(|h| c.get(j + h) == Some(&'#')))
            {
                j += 1;
            }
            i = j + 1 + hashes;
            out.push_str("\"\"");
            keep_lines(&mut out, &c[from..i.min(c.len())]);
        } else if c[i] == '"' {
            let from = i;
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
            keep_lines(&mut out, &c[from..i.min(c.len())]);
        } else if c[i] == '\'' && c.get(i + 1) == Some(&'\\') {
            i += 2;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push_str("' '");
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The line breaks of `skipped`, kept so that a stripped source has the
/// lines of the original.
fn keep_lines(out: &mut String, skipped: &[char]) {
    out.extend(skipped.iter().filter(|&&ch| ch == '\n'));
}

/// The source without its `#[cfg(test)]` items (tests may use anything).
fn without_tests(mut src: String) -> String {
    while let Some(at) = src.find("#[cfg(test)]") {
        let rest = &src[at..];
        let Some(open) = rest.find(['{', ';']) else {
            break;
        };
        let mut end = at + open + 1;
        if rest.as_bytes()[open] == b'{' {
            let mut depth = 1;
            for (k, b) in src[end..].bytes().enumerate() {
                match b {
                    b'{' => depth += 1,
                    b'}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    end += k + 1;
                    break;
                }
            }
        }
        src.replace_range(at..end, "");
    }
    src
}

/// The top-level modules `src` names after `prefix` (`crate::x::…`,
/// `crate::{x, y::z}`).
fn named_after(src: &str, prefix: &str) -> BTreeSet<String> {
    let word = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut found = BTreeSet::new();
    let mut from = 0;
    while let Some(k) = src[from..].find(prefix) {
        let at = from + k;
        from = at + prefix.len();
        if src[..at].chars().next_back().is_some_and(word) {
            continue;
        }
        let rest = &src[from..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item = String::new();
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 || (depth == 1 && ch == ',') {
                    let name: String = item.trim().chars().take_while(|&ch| word(ch)).collect();
                    if !name.is_empty() && name != "self" {
                        found.insert(name);
                    }
                    item.clear();
                    if depth == 0 {
                        break;
                    }
                } else {
                    item.push(ch);
                }
            }
        } else {
            let name: String = rest.chars().take_while(|&ch| word(ch)).collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

/// Every import between two top-level modules of src/.
fn edges() -> (BTreeSet<String>, BTreeSet<Edge>) {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut modules = BTreeSet::new();
    let mut named = Vec::new();
    for path in &files {
        let Some(module) = module_of(path) else {
            continue;
        };
        let text = std::fs::read_to_string(path).expect("a source file");
        let text = without_tests(strip(&text));
        let mut to = named_after(&text, "crate::");
        to.extend(named_after(&text, "agui_translate::"));
        modules.insert(module.clone());
        named.push((module, to));
    }
    let edges = named
        .into_iter()
        .flat_map(|(from, to)| to.into_iter().map(move |t| (from.clone(), t)))
        .filter(|(from, to)| from != to && modules.contains(to))
        .collect();
    (modules, edges)
}

/// What is wrong with `edges` under `layers`: a module in no layer (or in
/// two), an import of a layer above, a loop.
fn problems(
    modules: &BTreeSet<String>,
    edges: &BTreeSet<Edge>,
    layers: &[(&str, &[&str])],
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut layer_of = BTreeMap::new();
    for (i, (layer, names)) in layers.iter().enumerate() {
        for name in *names {
            if layer_of.insert(name.to_string(), i).is_some() {
                problems.push(format!("{name} is in two layers"));
            }
            if !modules.contains(*name) {
                problems.push(format!("{name} (layer {layer}) is not a module of src/"));
            }
        }
    }
    for m in modules {
        if !layer_of.contains_key(m) {
            problems.push(format!("{m} is in no layer: add it to LAYERS"));
        }
    }
    for (from, to) in edges {
        if let (Some(&f), Some(&t)) = (layer_of.get(from), layer_of.get(to)) {
            if t < f {
                problems.push(format!(
                    "{from} ({}) imports {to} ({}), a layer above it",
                    layers[f].0, layers[t].0
                ));
            }
        }
    }
    // A loop: a module that reaches itself.
    let next = |m: &str| -> Vec<&str> {
        edges
            .iter()
            .filter(|(f, _)| f == m)
            .map(|(_, t)| t.as_str())
            .collect()
    };
    for start in modules {
        let mut seen = BTreeSet::new();
        let mut stack = next(start);
        while let Some(m) = stack.pop() {
            if m == start {
                problems.push(format!("{start} is in an import loop"));
                break;
            }
            if seen.insert(m) {
                stack.extend(next(m));
            }
        }
    }
    problems
}

#[test]
fn imports_point_down_and_never_loop() {
    let (modules, edges) = edges();
    // The scan sees the imports it must: one known edge per kind of path.
    for known in [
        ("process", "converse"),
        ("dialect", "source"),
        ("main", "cli"),
    ] {
        let known = (known.0.to_owned(), known.1.to_owned());
        assert!(edges.contains(&known), "{known:?} not seen");
    }
    let problems = problems(&modules, &edges, LAYERS);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn an_upward_import_or_a_loop_fails() {
    let modules: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
    let layers: &[(&str, &[&str])] = &[("top", &["a"]), ("bottom", &["b", "c"])];
    let edge = |f: &str, t: &str| (f.to_owned(), t.to_owned());
    let down: BTreeSet<Edge> = [edge("a", "b"), edge("b", "c")].into();
    assert!(problems(&modules, &down, layers).is_empty());

    let up: BTreeSet<Edge> = [edge("a", "b"), edge("b", "c"), edge("c", "a")].into();
    let p = problems(&modules, &up, layers);
    assert!(p
        .iter()
        .any(|p| p == "c (bottom) imports a (top), a layer above it"));
    assert!(p.iter().any(|p| p == "a is in an import loop"));

    let within: BTreeSet<Edge> = [edge("b", "c"), edge("c", "b")].into();
    let p = problems(&modules, &within, layers);
    assert_eq!(p, ["b is in an import loop", "c is in an import loop"]);

    let unplaced: BTreeSet<String> = ["a", "b", "c", "d"].map(String::from).into();
    let p = problems(&unplaced, &down, layers);
    assert_eq!(p, ["d is in no layer: add it to LAYERS"]);
}

#[test]
fn the_scan_reads_paths_not_comments_or_strings() {
    let text = without_tests(strip(
        "use crate::{a::X, b, self};\n// crate::c\n/// [`crate::d`]\n\
         let s = \"crate::e\"; let r = r#\"crate::f\"#; let c = '\"'; x(crate::g::h);\n\
         fn f<'a>(_: &'a str) {}\n#[cfg(test)]\nmod tests { use crate::i; }\nuse crate::j;",
    ));
    let found: Vec<String> = named_after(&text, "crate::").into_iter().collect();
    assert_eq!(found, ["a", "b", "g", "j"]);
}

/// lib.rs declares the modules layer by layer, top to bottom, so that the
/// crate's page reads as the layers do.
#[test]
fn lib_declares_the_modules_in_layer_order() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("src/lib.rs");
    let layer_of = |m: &str| LAYERS.iter().position(|(_, names)| names.contains(&m));
    let declared: Vec<(Option<usize>, &str)> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
        .map(|m| (layer_of(m), m))
        .collect();
    assert!(declared.iter().all(|(l, _)| l.is_some()), "{declared:?}");
    assert!(
        declared.windows(2).all(|w| w[0].0 <= w[1].0),
        "{declared:?}"
    );
    let layered = LAYERS.iter().map(|(_, names)| names.len()).sum::<usize>();
    assert_eq!(declared.len(), layered - 1, "every module but main");
}

/// docs/architecture.md names every layer and every module.
#[test]
fn the_architecture_page_names_every_layer_and_module() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .expect("docs/architecture.md");
    for (layer, names) in LAYERS {
        assert!(doc.contains(layer), "layer {layer}");
        for name in *names {
            let named = [format!("`{name}`"), format!("`{name}/`")];
            assert!(named.iter().any(|n| doc.contains(n)), "module {name}");
        }
    }
}

/// The longest a function of src/ may be, in lines from `fn` to its closing
/// brace: what a reader can hold.
const MAX_FN_LINES: usize = 150;

/// Every function of `src` (stripped of comments and strings, lines kept):
/// its name, the line it starts on and how many lines it spans.
fn functions(src: &str) -> Vec<(String, usize, usize)> {
    let b = src.as_bytes();
    let word = |k: usize| {
        b.get(k)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    };
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(k) = src[from..].find("fn ") {
        let at = from + k;
        from = at + 3;
        if at > 0 && word(at - 1) {
            continue;
        }
        let name: String = src[from..]
            .chars()
            .take_while(|&ch| ch.is_alphanumeric() || ch == '_')
            .collect();
        if name.is_empty() {
            continue; // a function pointer type: `fn(u8)`
        }
        let Some(open) = src[from..].find(['{', ';']).map(|o| from + o) else {
            break;
        };
        if b[open] == b';' {
            continue; // a declaration without a body
        }
        let mut depth = 0;
        let mut end = open;
        for (i, &c) in b.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                end = i;
                break;
            }
        }
        let line = src[..at].matches('\n').count() + 1;
        let lines = src[at..=end].matches('\n').count() + 1;
        found.push((name, line, lines));
    }
    found
}

#[test]
fn no_function_is_longer_than_a_reader_can_hold() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut long = Vec::new();
    let mut seen = 0;
    for path in &files {
        let rel = path
            .strip_prefix(src())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = strip(&std::fs::read_to_string(path).expect("a source file"));
        for (name, line, lines) in functions(&text) {
            seen += 1;
            if lines > MAX_FN_LINES {
                long.push(format!("src/{rel}:{line} {name}: {lines} lines"));
            }
        }
    }
    assert!(seen > 500, "only {seen} functions seen");
    assert!(long.is_empty(), "split these:\n{}", long.join("\n"));
}

#[test]
fn the_function_scan_counts_lines_from_fn_to_its_brace() {
    let text = strip(
        "fn a() {\n    let s = \"}\n\";\n}\n/* fn b() {\n} */\nfn c(f: fn(u8)) -> u8;\n\
         impl X { pub fn d<T>(&self) where T: Y {\n    if x { y }\n} }\n",
    );
    let got = functions(&text);
    assert_eq!(got, [("a".to_owned(), 1, 4), ("d".to_owned(), 8, 3)]);
}

/// The files of `dir` that are Rust sources, and the folders in it.
fn entries(dir: &Path) -> (Vec<String>, Vec<PathBuf>) {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a readable folder") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            dirs.push(path);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path.file_stem().unwrap().to_string_lossy().into_owned());
        }
    }
    (files, dirs)
}

/// src/ holds few entries, each folder few files, and each folder says what
/// it is for in its mod.rs; the architecture page names every file.
#[test]
fn the_folders_are_few_small_and_named() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .expect("docs/architecture.md");
    let (files, dirs) = entries(&src());
    assert!(
        files.len() + dirs.len() <= 15,
        "src/ holds {} entries: {files:?} {dirs:?}",
        files.len() + dirs.len()
    );
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let (inner, sub) = entries(&dir);
        assert!(sub.is_empty(), "src/{name} holds folders: {sub:?}");
        assert!(inner.len() <= 10, "src/{name} holds {} files", inner.len());
        assert!(
            doc.contains(&format!("`{name}/`")),
            "folder {name}/ on the page"
        );
        let head = std::fs::read_to_string(dir.join("mod.rs")).expect("a mod.rs");
        assert!(
            head.starts_with("//! "),
            "src/{name}/mod.rs opens with what it is for"
        );
        for file in inner.iter().filter(|f| *f != "mod") {
            assert!(
                doc.contains(&format!("`{file}`")),
                "src/{name}/{file}.rs on the page"
            );
        }
    }
}
