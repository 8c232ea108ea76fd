//! Every relative link and every `#anchor` in the README, SECURITY.md and docs/*.md resolves:
//! the file (or directory) a link names exists, and an anchor names a heading of the Markdown
//! file it points into, computed as GitHub computes heading anchors.
//!
//! A small scanner rather than a Markdown crate: what it needs is the links outside code
//! (fenced blocks and code spans) and the headings, nothing more.

use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path, PathBuf};

/// The documents whose links are checked, relative to the repository's top. A missing one
/// is a failure like a broken link: SECURITY.md is part of the documentation set.
const TOP_LEVEL: [&str; 2] = ["README.md", "SECURITY.md"];

/// Where the documents are read from: the real repository, or a set of files in memory.
trait Tree {
    fn read(&self, path: &Path) -> Option<String>;
    fn exists(&self, path: &Path) -> bool;
}

struct Disk(PathBuf);

impl Tree for Disk {
    fn read(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(self.0.join(path)).ok()
    }
    fn exists(&self, path: &Path) -> bool {
        self.0.join(path).exists()
    }
}

/// A link as written: where it is and what it points to.
#[derive(Debug, PartialEq)]
struct Link {
    line: usize,
    target: String,
}

/// What a Markdown file holds for this check: its links (outside code) and its heading anchors.
#[derive(Debug, Default)]
struct Scan {
    links: Vec<Link>,
    anchors: HashSet<String>,
}

/// GitHub's anchor for a heading's text: inline markup dropped (code-span backticks, a link's
/// URL), lowercased, every character that is not a letter, a digit, a space, `-` or `_`
/// dropped, spaces turned into `-`.
fn anchor_of(heading: &str) -> String {
    let text = strip_inline_links(heading);
    let mut anchor = String::new();
    for c in text.trim().chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() || c == '-' || c == '_' {
            anchor.push(c);
        } else if c == ' ' {
            anchor.push('-');
        }
    }
    anchor
}

/// `[text](url)` becomes `text`, so a heading's anchor does not take the URL's characters.
fn strip_inline_links(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some((label, after)) = bracketed(&rest[open..]) else { break };
        let Some(url_end) = after.strip_prefix('(').and_then(|a| a.find(')')) else {
            out.push_str(&rest[..open + 1]);
            rest = &rest[open + 1..];
            continue;
        };
        out.push_str(&rest[..open]);
        out.push_str(label);
        rest = &after[1 + url_end + 1..];
    }
    out.push_str(rest);
    out
}

/// For text starting with `[`: the label up to the matching `]`, and what follows it.
fn bracketed(text: &str) -> Option<(&str, &str)> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some((&text[1..i], &text[i + 1..]));
                }
            }
            _ => {}
        }
    }
    None
}

/// The line with its code spans removed (`` `…` `` of any backtick count), so that a link
/// written as code is not taken for one.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        let fence = "`".repeat(ticks);
        match after.find(&fence) {
            Some(end) => {
                // What a code span holds is not a link: its text is left out.
                out.push(' ');
                rest = &after[end + ticks..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the inline links (`[text](target)`, `![alt](target)`) of one line of prose.
fn inline_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find("](") {
        let after = &rest[open + 2..];
        let Some(close) = after.find(')') else { break };
        let raw = after[..close].trim();
        // `<target>` and `target "title"` forms.
        let target = raw
            .strip_prefix('<')
            .and_then(|t| t.split_once('>'))
            .map_or_else(|| raw.split_whitespace().next().unwrap_or(""), |(t, _)| t);
        targets.push(target.to_string());
        rest = &after[close + 1..];
    }
    targets
}

/// The target of a reference definition, `[label]: target`.
fn reference_target(line: &str) -> Option<String> {
    let trimmed = line.trim_start();
    if !trimmed.starts_with('[') {
        return None;
    }
    let (_, after) = bracketed(trimmed)?;
    let target = after.strip_prefix(':')?.split_whitespace().next()?;
    Some(target.trim_start_matches('<').trim_end_matches('>').to_string())
}

/// Links and heading anchors of a Markdown text. Fenced code blocks hold neither.
fn scan(text: &str) -> Scan {
    let mut found = Scan::default();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut add_heading = |heading: &str, found: &mut Scan| {
        let base = anchor_of(heading);
        // GitHub numbers repeated anchors: `name`, `name-1`, `name-2`, …
        let n = seen.entry(base.clone()).or_insert(0);
        let anchor = if *n == 0 { base.clone() } else { format!("{base}-{n}") };
        *n += 1;
        found.anchors.insert(anchor);
    };
    let mut fence: Option<String> = None;
    let mut previous_prose: Option<String> = None;
    for (index, raw) in text.lines().enumerate() {
        let trimmed = raw.trim_start();
        let indent = raw.len() - trimmed.len();
        if let Some(open) = &fence {
            if indent < 4
                && trimmed.starts_with(open.as_str())
                && trimmed.trim_end().chars().all(|c| c == open.chars().next().unwrap_or('`'))
            {
                fence = None;
            }
            continue;
        }
        if indent < 4 && (trimmed.starts_with("```") || trimmed.starts_with("~~~")) {
            let mark = trimmed.chars().next().unwrap_or('`');
            fence = Some(trimmed.chars().take_while(|&c| c == mark).collect());
            previous_prose = None;
            continue;
        }
        if indent >= 4 && previous_prose.is_none() {
            // An indented code block (a paragraph cannot be continued by one).
            continue;
        }
        let line = without_code_spans(raw);
        let hashes = trimmed.chars().take_while(|&c| c == '#').count();
        if indent < 4 && (1..=6).contains(&hashes) && trimmed[hashes..].starts_with([' ', '\t']) {
            add_heading(atx_heading_text(&trimmed[hashes..]), &mut found);
            previous_prose = None;
        } else if indent < 4
            && !trimmed.is_empty()
            && (trimmed.trim_end().chars().all(|c| c == '=')
                || trimmed.trim_end().chars().all(|c| c == '-') && trimmed.trim_end().len() >= 2)
            && previous_prose.is_some()
        {
            // A setext heading: the paragraph line above, underlined.
            let heading = previous_prose.take().unwrap_or_default();
            add_heading(&heading, &mut found);
            continue;
        } else if trimmed.is_empty() {
            previous_prose = None;
        } else {
            previous_prose = Some(raw.trim().to_string());
        }
        for target in inline_targets(&line).into_iter().chain(reference_target(&line)) {
            found.links.push(Link { line: index + 1, target });
        }
    }
    found
}

/// An ATX heading's text: without the optional closing `#`s, which must follow a space.
fn atx_heading_text(after_hashes: &str) -> &str {
    let text = after_hashes.trim();
    let without = text.trim_end_matches('#');
    if without.len() == text.len() {
        text
    } else if without.is_empty() {
        ""
    } else if without.ends_with([' ', '\t']) {
        without.trim_end()
    } else {
        text
    }
}

/// `base/../x/./y` as `x/y`, without touching the file system; `None` when it climbs above
/// the repository's top.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(name) => out.push(name),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// A link that leaves the repository (a scheme such as `https:` or `mailto:`) is not checked here.
fn is_external(target: &str) -> bool {
    let scheme_end = target.find(':');
    let path_start = target.find(['/', '#', '?']).unwrap_or(target.len());
    scheme_end.is_some_and(|end| end < path_start && end > 0)
}

/// The scan of a Markdown file, read once; `None` when it cannot be read.
fn scan_of<'a>(scans: &'a mut BTreeMap<PathBuf, Option<Scan>>, tree: &dyn Tree, path: &Path) -> Option<&'a Scan> {
    scans.entry(path.to_path_buf()).or_insert_with(|| tree.read(path).map(|text| scan(&text))).as_ref()
}

/// Every broken link of `documents` (repository-relative paths), as `file:line: what`.
fn broken_links(tree: &dyn Tree, documents: &[PathBuf]) -> Vec<String> {
    let mut scans: BTreeMap<PathBuf, Option<Scan>> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut checks = Vec::new();
    for document in documents {
        let Some(found) = scan_of(&mut scans, tree, document) else {
            problems.push(format!("{}: the document does not exist", document.display()));
            continue;
        };
        for link in &found.links {
            checks.push((document.clone(), link.line, link.target.clone()));
        }
    }
    for (document, line, target) in checks {
        let at = format!("{}:{line}: link {target}", document.display());
        if target.is_empty() {
            problems.push(format!("{at}: empty target"));
            continue;
        }
        if is_external(&target) {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target.as_str(), None),
        };
        let path = path.split('?').next().unwrap_or("");
        let file = if path.is_empty() {
            Some(document.clone())
        } else if path.starts_with('/') {
            None
        } else {
            normalize(&document.parent().unwrap_or(Path::new("")).join(path))
        };
        let Some(file) = file else {
            problems.push(format!("{at}: not a path inside the repository"));
            continue;
        };
        if !tree.exists(&file) {
            problems.push(format!("{at}: {} does not exist", file.display()));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if file.extension().is_none_or(|e| e != "md") {
            problems.push(format!("{at}: an anchor into {}, which is not Markdown", file.display()));
            continue;
        }
        match scan_of(&mut scans, tree, &file) {
            Some(found) if found.anchors.contains(anchor) => {}
            Some(_) => problems.push(format!("{at}: {} has no heading with the anchor #{anchor}", file.display())),
            None => problems.push(format!("{at}: {} cannot be read", file.display())),
        }
    }
    problems
}

#[test]
fn every_relative_link_and_anchor_of_the_docs_resolves() {
    let top = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut documents: Vec<PathBuf> = TOP_LEVEL.iter().map(PathBuf::from).collect();
    let mut pages: Vec<PathBuf> = std::fs::read_dir(top.join("docs"))
        .expect("docs/ exists")
        .map(|entry| PathBuf::from("docs").join(entry.expect("a docs/ entry").file_name()))
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    assert!(!pages.is_empty(), "docs/ holds no Markdown page");
    documents.extend(pages);
    let problems = broken_links(&Disk(top), &documents);
    assert!(problems.is_empty(), "broken links in the documentation:\n{}", problems.join("\n"));
}

/// A repository in memory: path → content (`None` for a directory).
struct Memory(BTreeMap<PathBuf, Option<&'static str>>);

impl Memory {
    fn new(files: &[(&str, Option<&'static str>)]) -> Memory {
        Memory(files.iter().map(|(p, t)| (PathBuf::from(p), *t)).collect())
    }
}

impl Tree for Memory {
    fn read(&self, path: &Path) -> Option<String> {
        self.0.get(path).copied().flatten().map(str::to_string)
    }
    fn exists(&self, path: &Path) -> bool {
        self.0.contains_key(path)
    }
}

#[test]
fn anchors_are_computed_as_github_computes_them() {
    assert_eq!(anchor_of("Build and test"), "build-and-test");
    assert_eq!(anchor_of("The `cfn-bootstrap` command"), "the-cfn-bootstrap-command");
    assert_eq!(anchor_of("Crash consistency (SIGKILL)"), "crash-consistency-sigkill");
    assert_eq!(anchor_of("Soak: cfn-hup under faults"), "soak-cfn-hup-under-faults");
    assert_eq!(
        anchor_of("Supported distributions and package/service managers"),
        "supported-distributions-and-packageservice-managers"
    );
    assert_eq!(anchor_of("`-c \"a, b\"` trims configSet names"), "-c-a-b-trims-configset-names");
    assert_eq!(anchor_of("`metadata_db.json` forgets removed hooks"), "metadata_dbjson-forgets-removed-hooks");
    assert_eq!(anchor_of("End to end: the users' playbook"), "end-to-end-the-users-playbook");
    assert_eq!(anchor_of("See [the docs](docs/README.md) now"), "see-the-docs-now");
    assert_eq!(anchor_of("One URL parser; HTTPS → HTTP"), "one-url-parser-https--http");
    assert_eq!(anchor_of(atx_heading_text(" Closed ##")), "closed");
    assert_eq!(anchor_of(atx_heading_text(" C#")), "c");
    assert_eq!(anchor_of(atx_heading_text(" `f(x)` in C# ")), "fx-in-c");
}

#[test]
fn headings_in_code_do_not_count_and_repeated_ones_are_numbered() {
    let found = scan(
        "# Title\n\n```console\n# not a heading\n[not](a-link.md)\n```\n\n    # indented code\n\n\
         ## Twice\n## Twice\nUnderlined\n----------\nA `[code](span.md)` and [a link](real.md#x).\n",
    );
    let mut anchors: Vec<&str> = found.anchors.iter().map(String::as_str).collect();
    anchors.sort();
    assert_eq!(anchors, ["title", "twice", "twice-1", "underlined"]);
    assert_eq!(found.links, [Link { line: 14, target: "real.md#x".into() }]);
}

#[test]
fn a_broken_file_link_or_a_missing_anchor_is_reported() {
    let tree = Memory::new(&[
        (
            "README.md",
            Some(
                "# Top\n\nSee [a](docs/a.md#second), [b](docs/b.md), [c](docs/a.md#third),\n[d](#top), [e](#nowhere), [f](https://example.com/x), [g](dist/), [h](../outside.md).\n\n[ref]: docs/missing.md\n",
            ),
        ),
        ("docs", None),
        (
            "docs/a.md",
            Some("# First\n\n## Second\n\nBack to [the top](../README.md#top) and [dist](../dist/README.md#files).\n"),
        ),
        ("dist", None),
        ("dist/README.md", Some("# dist\n")),
    ]);
    let problems =
        broken_links(&tree, &[PathBuf::from("README.md"), PathBuf::from("docs/a.md"), PathBuf::from("SECURITY.md")]);
    assert_eq!(
        problems,
        [
            "SECURITY.md: the document does not exist",
            "README.md:3: link docs/b.md: docs/b.md does not exist",
            "README.md:3: link docs/a.md#third: docs/a.md has no heading with the anchor #third",
            "README.md:4: link #nowhere: README.md has no heading with the anchor #nowhere",
            "README.md:4: link ../outside.md: not a path inside the repository",
            "README.md:6: link docs/missing.md: docs/missing.md does not exist",
            "docs/a.md:5: link ../dist/README.md#files: dist/README.md has no heading with the anchor #files",
        ]
    );
}
