//! A shell script read into simple commands and their words, as far as finding the
//! cfn-init, cfn-signal and cfn-hup calls in user data needs: `\` + newline continues a
//! line; `;`, `&`, `&&`, `||`, `|`, `(`, `)` and newlines separate commands; single and
//! double quotes are removed; `#` starts a comment at the start of a word; `$(...)` and
//! backquotes stay part of their word, and the commands inside them are read as well;
//! redirections and their targets are dropped; here-documents are skipped. Nothing is
//! expanded: `$X` stays `$X`.
//!
//! Linear in the script's length for each level of `$(...)`, and that nesting is bounded
//! by [`MAX_NESTING`]; anything not understood ends a word or a command, never a panic.

use std::collections::HashMap;

/// How deep `$(...)` inside `$(...)` is read; deeper ones stay text only.
pub const MAX_NESTING: usize = 8;

/// A word with quotes removed, and the byte offset in the script where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    pub start: usize,
}

/// A simple command: its words, the command word first.
pub type Command = Vec<Word>;

/// The simple commands of `script`, in order (those inside `$(...)` after the one
/// holding them).
pub fn commands(script: &str) -> Vec<Command> {
    let mut out = Vec::new();
    read(script, 0, 0, &mut out);
    out
}

struct Reader<'a> {
    script: &'a str,
    bytes: &'a [u8],
    i: usize,
    base: usize,
    word: Option<Word>,
    command: Command,
    /// The next word completed is a redirection's target.
    redirect: bool,
    /// Here-documents whose bodies start after this line: (delimiter, strip tabs).
    heredocs: Vec<(String, bool)>,
    nested: Vec<(usize, usize)>,
}

fn read(script: &str, base: usize, depth: usize, out: &mut Vec<Command>) {
    let mut reader = Reader {
        script,
        bytes: script.as_bytes(),
        i: 0,
        base,
        word: None,
        command: Vec::new(),
        redirect: false,
        heredocs: Vec::new(),
        nested: Vec::new(),
    };
    reader.run(out);
    if depth < MAX_NESTING {
        for (start, end) in std::mem::take(&mut reader.nested) {
            read(&script[start..end], base + start, depth + 1, out);
        }
    }
}

impl Reader<'_> {
    fn push_char(&mut self, c: char, at: usize) {
        let base = self.base;
        self.word.get_or_insert_with(|| Word { text: String::new(), start: base + at }).text.push(c);
    }

    fn push_str(&mut self, s: &str, at: usize) {
        let base = self.base;
        self.word.get_or_insert_with(|| Word { text: String::new(), start: base + at }).text.push_str(s);
    }

    /// Marks a word as started (an empty quoted word `''` is a word).
    fn start_word(&mut self, at: usize) {
        let base = self.base;
        self.word.get_or_insert_with(|| Word { text: String::new(), start: base + at });
    }

    fn end_word(&mut self) {
        if let Some(word) = self.word.take() {
            match std::mem::take(&mut self.redirect) {
                true => {}
                false => self.command.push(word),
            }
        }
    }

    fn end_command(&mut self, out: &mut Vec<Command>) {
        self.end_word();
        self.redirect = false;
        if !self.command.is_empty() {
            out.push(std::mem::take(&mut self.command));
        }
    }

    fn peek(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.i + ahead).copied()
    }

    /// The next character, and its length in bytes.
    fn char_at(&self, i: usize) -> (char, usize) {
        let c = self.script[i..].chars().next().unwrap_or('\0');
        (c, c.len_utf8().max(1))
    }

    fn run(&mut self, out: &mut Vec<Command>) {
        while self.i < self.bytes.len() {
            let at = self.i;
            match self.bytes[at] {
                b'\\' => match self.peek(1) {
                    Some(b'\n') => self.i += 2,
                    Some(_) => {
                        let (c, n) = self.char_at(at + 1);
                        self.push_char(c, at);
                        self.i += 1 + n;
                    }
                    None => self.i += 1,
                },
                b' ' | b'\t' | b'\r' => {
                    self.end_word();
                    self.i += 1;
                }
                b'\n' => {
                    self.end_command(out);
                    self.i += 1;
                    self.skip_heredocs();
                }
                b'#' if self.word.is_none() => {
                    while self.i < self.bytes.len() && self.bytes[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                b';' | b'(' | b')' => {
                    self.end_command(out);
                    self.i += 1;
                }
                b'&' if self.peek(1) == Some(b'>') => {
                    self.end_word();
                    self.i += 2;
                    self.skip_redirection_operator();
                }
                b'|' | b'&' => {
                    self.end_command(out);
                    self.i += 1;
                }
                b'<' if self.peek(1) == Some(b'<') && self.peek(2) != Some(b'<') => {
                    self.end_word();
                    self.i += 2;
                    self.heredoc();
                }
                b'<' | b'>' => {
                    // `2>&1`: the descriptor before the operator is part of the redirection.
                    if self.word.as_ref().is_some_and(|w| w.text.bytes().all(|b| b.is_ascii_digit())) {
                        self.word = None;
                    }
                    self.end_word();
                    self.i += 1;
                    self.skip_redirection_operator();
                }
                b'\'' => {
                    self.start_word(at);
                    let end = self.script[at + 1..].find('\'').map_or(self.bytes.len(), |n| at + 1 + n);
                    self.push_str(&self.script[at + 1..end], at);
                    self.i = (end + 1).min(self.bytes.len());
                }
                b'"' => self.double_quoted(at),
                b'$' if self.peek(1) == Some(b'(') => {
                    let end = self.closing_paren(at + 2);
                    self.nested.push((at + 2, end.min(self.bytes.len())));
                    self.push_str(&self.script[at..(end + 1).min(self.bytes.len())], at);
                    self.i = (end + 1).min(self.bytes.len());
                }
                b'`' => {
                    let end = self.script[at + 1..].find('`').map_or(self.bytes.len(), |n| at + 1 + n);
                    self.nested.push((at + 1, end));
                    self.push_str(&self.script[at..(end + 1).min(self.bytes.len())], at);
                    self.i = (end + 1).min(self.bytes.len());
                }
                _ => {
                    let (c, n) = self.char_at(at);
                    self.push_char(c, at);
                    self.i += n;
                }
            }
        }
        self.end_command(out);
    }

    /// `>`, `>>`, `>&`, `>|`, `<>`, `<&`: the rest of the operator; its target is the
    /// next word.
    fn skip_redirection_operator(&mut self) {
        while matches!(self.peek(0), Some(b'>' | b'&' | b'|')) {
            self.i += 1;
        }
        self.redirect = true;
    }

    fn double_quoted(&mut self, at: usize) {
        self.start_word(at);
        self.i = at + 1;
        while self.i < self.bytes.len() {
            let here = self.i;
            match self.bytes[here] {
                b'"' => {
                    self.i += 1;
                    return;
                }
                b'\\' => match self.peek(1) {
                    Some(b'\n') => self.i += 2,
                    Some(b @ (b'"' | b'\\' | b'$' | b'`')) => {
                        self.push_char(b as char, at);
                        self.i += 2;
                    }
                    _ => {
                        self.push_char('\\', at);
                        self.i += 1;
                    }
                },
                b'$' if self.peek(1) == Some(b'(') => {
                    let end = self.closing_paren(here + 2);
                    self.nested.push((here + 2, end.min(self.bytes.len())));
                    self.push_str(&self.script[here..(end + 1).min(self.bytes.len())], at);
                    self.i = (end + 1).min(self.bytes.len());
                }
                _ => {
                    let (c, n) = self.char_at(here);
                    self.push_char(c, at);
                    self.i += n;
                }
            }
        }
    }

    /// The offset of the `)` closing a `$(` whose text starts at `from` (past the end of
    /// the script when it is never closed), skipping quoted text.
    fn closing_paren(&self, from: usize) -> usize {
        let mut depth = 1usize;
        let mut i = from;
        while i < self.bytes.len() {
            match self.bytes[i] {
                b'\\' => i += 1,
                b'\'' => i = self.script[i + 1..].find('\'').map_or(self.bytes.len(), |n| i + 1 + n),
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        return i;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        self.bytes.len()
    }

    /// `<<WORD`, `<<-WORD`, `<<'WORD'`, `<<"WORD"`: the body, from the next line to a
    /// line that is WORD, is skipped when this line ends.
    fn heredoc(&mut self) {
        let strip = self.peek(0) == Some(b'-');
        if strip {
            self.i += 1;
        }
        while matches!(self.peek(0), Some(b' ' | b'\t')) {
            self.i += 1;
        }
        let mut delimiter = String::new();
        while let Some(b) = self.peek(0) {
            match b {
                b'\'' | b'"' | b'\\' => self.i += 1,
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')' => break,
                _ => {
                    let (c, n) = self.char_at(self.i);
                    delimiter.push(c);
                    self.i += n;
                }
            }
        }
        if !delimiter.is_empty() {
            self.heredocs.push((delimiter, strip));
        }
    }

    fn skip_heredocs(&mut self) {
        for (delimiter, strip) in std::mem::take(&mut self.heredocs) {
            while self.i < self.bytes.len() {
                let end = self.script[self.i..].find('\n').map_or(self.bytes.len(), |n| self.i + n);
                let line = &self.script[self.i..end];
                let line = if strip { line.trim_start_matches('\t') } else { line };
                self.i = (end + 1).min(self.bytes.len());
                if line == delimiter {
                    break;
                }
            }
        }
    }
}

/// Words before the command word that only set up how it runs: assignments, reserved
/// words, the runners that take a command (`sudo cfn-init`), and the `-` of a
/// cloud-config `runcmd` item (`- /opt/aws/bin/cfn-init -v …`).
fn is_prefix(word: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "-", "sudo", "exec", "time", "nohup",
        "env", "command",
    ];
    assignment(word).is_some() || PREFIXES.contains(&word)
}

/// A call of one of the helper scripts: which (`cfn-init`, …), where its command word
/// is, and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub tool: &'static str,
    pub at: usize,
    pub arguments: Vec<Word>,
    /// Called as the Windows tools are (`cfn-init.exe`): the instance runs Windows.
    pub windows: bool,
}

const TOOLS: &[&str] = &["cfn-init", "cfn-signal", "cfn-hup"];

/// The cfn-init, cfn-signal and cfn-hup calls of `script`, by their command word with
/// any directory before it (`/opt/aws/bin/cfn-init`), and the Windows tools' names
/// (`cfn-init.exe`, `C:\\…\\cfn-init.exe`: a Windows script's backslashes are not the
/// shell's escapes, so only how the word ends is looked at).
///
/// A command word that is a variable (`$cfninit`, `${CFN_INIT}`) is the tool the script
/// last assigned to it (`cfninit=/opt/aws/bin/cfn-init`), as scripts choose the path per
/// distribution; an assignment of anything else forgets it.
pub fn calls(script: &str) -> Vec<Call> {
    let mut variables: HashMap<String, (&'static str, bool)> = HashMap::new();
    commands(script)
        .into_iter()
        .filter_map(|command| {
            let mut words = command.into_iter().peekable();
            while let Some(word) = words.next_if(|w| is_prefix(&w.text)) {
                if let Some((name, value)) = assignment(&word.text) {
                    match tool_of(value) {
                        Some(tool) => variables.insert(name.to_string(), tool),
                        None => variables.remove(name),
                    };
                }
            }
            let first = words.next()?;
            let (tool, windows) = tool_of(&first.text).or_else(|| variables.get(variable(&first.text)?).copied())?;
            // `sudo -u root cfn-init` was skipped up to `-u`: options of sudo are not read.
            Some(Call { tool, at: first.start, arguments: words.collect(), windows })
        })
        .collect()
}

/// `NAME=value`, split.
fn assignment(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    is_name(name).then_some((name, value))
}

/// The variable a word expands whole: `$name` or `${name}`.
fn variable(word: &str) -> Option<&str> {
    let rest = word.strip_prefix('$')?;
    let name = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')).unwrap_or(rest);
    is_name(name).then_some(name)
}

/// A shell variable's name: letters, digits and `_`, not starting with a digit.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit()
}

/// Which helper a command word calls, and whether as the Windows one.
fn tool_of(word: &str) -> Option<(&'static str, bool)> {
    let name = word.rsplit(['/', '\\']).next().unwrap_or("");
    if let Some(tool) = TOOLS.iter().find(|t| **t == name) {
        return Some((tool, false));
    }
    let lower = word.to_ascii_lowercase();
    let stem = lower.strip_suffix(".exe")?;
    let tool = TOOLS.iter().find(|t| stem.ends_with(*t))?;
    // The word ends with the tool's name, whole: `cfn-init.exe`, `…\\cfn-init.exe`,
    // `C:cfncfn-init.exe` (a POSIX shell's reading of `C:\\cfn\\cfn-init.exe`).
    let before = stem[..stem.len() - tool.len()].chars().last();
    before.is_none_or(|c| !c.is_ascii_alphanumeric() || stem.contains(':')).then_some((tool, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(script: &str) -> Vec<Vec<String>> {
        commands(script).into_iter().map(|c| c.into_iter().map(|w| w.text).collect()).collect()
    }

    #[test]
    fn a_variable_holding_a_tools_path_calls_that_tool() {
        let script = "if [ -x /usr/local/bin/cfn-init ]; then\n  cfninit=/usr/local/bin/cfn-init\nelse\n  cfninit=/opt/aws/bin/cfn-init\nfi\n$cfninit -s S -r R -c OnCreate || exit 1\n${cfninit} -v\n";
        let found = calls(script);
        assert_eq!(found.iter().map(|c| c.tool).collect::<Vec<_>>(), ["cfn-init", "cfn-init"]);
        assert_eq!(
            found[0].arguments.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(),
            ["-s", "S", "-r", "R", "-c", "OnCreate"]
        );
        // Assigned something else since: not the tool any more; never assigned: nothing.
        assert!(calls("x=/opt/aws/bin/cfn-init\nx=/bin/true\n$x -c a\n$y -c b\n").is_empty());
    }

    #[test]
    fn windows_calls_are_the_tools_called_on_windows() {
        let script = "<script>\ncfn-init.exe -v -s S -r R --region r\n</script>\n\
                      C:\\\\\"Program Files\"\\\\Amazon\\\\cfn-bootstrap\\\\cfn-signal.exe -e 0 h\nC:\\cfn\\cfn-hup.exe\nmycfn-init.exe\n";
        let found: Vec<(&str, bool)> = calls(script).iter().map(|c| (c.tool, c.windows)).collect();
        assert_eq!(found, [("cfn-init", true), ("cfn-signal", true), ("cfn-hup", true)]);
        assert_eq!(tool_of("/opt/aws/bin/cfn-init"), Some(("cfn-init", false)));
        assert_eq!(tool_of("CFN-INIT.EXE"), Some(("cfn-init", true)));
    }

    #[test]
    fn separators_quotes_and_continuations() {
        let script = "#!/bin/bash -xe\nyum -y update; /opt/aws/bin/cfn-init -v \\\n  --stack 'my stack' -r \"Web\"\"Server\" && echo ok || exit 1 | tee x # done\n";
        assert_eq!(
            texts(script),
            vec![
                vec!["yum", "-y", "update"],
                vec!["/opt/aws/bin/cfn-init", "-v", "--stack", "my stack", "-r", "WebServer"],
                vec!["echo", "ok"],
                vec!["exit", "1"],
                vec!["tee", "x"],
            ]
        );
        let commands = commands(script);
        let stack = &commands[1][3];
        assert_eq!(&script[stack.start..stack.start + 10], "'my stack'");
    }

    #[test]
    fn substitutions_are_words_and_their_commands_are_read() {
        let script = "X=$(cfn-init -c \"a,b\" --resource R) `cfn-hup`\necho \"$(cfn-signal -e $? ${Handle})\"";
        let all = texts(script);
        assert_eq!(all[0], vec!["X=$(cfn-init -c \"a,b\" --resource R)", "`cfn-hup`"]);
        assert!(all.contains(&vec![
            "cfn-init".to_string(),
            "-c".into(),
            "a,b".into(),
            "--resource".into(),
            "R".into()
        ]));
        assert!(all.contains(&vec!["cfn-signal".to_string(), "-e".into(), "$?".into(), "${Handle}".into()]));
        let calls = calls(script);
        let init = calls.iter().find(|c| c.tool == "cfn-init").unwrap();
        assert_eq!(&script[init.at..init.at + 8], "cfn-init");
        assert_eq!(&script[init.arguments[1].start..init.arguments[1].start + 5], "\"a,b\"");
    }

    #[test]
    fn redirections_heredocs_and_prefixes_are_not_arguments() {
        let script = "cat > /etc/x <<-'EOF'\n\tcfn-init -r Nope\n\tEOF\nsudo FOO=1 /usr/local/bin/cfn-init -r R 2>&1 >> /var/log/x.log &> /dev/null\nif cfn-signal -e 0 --resource G; then :; fi\n";
        assert_eq!(
            calls(script)
                .iter()
                .map(|c| (c.tool, c.arguments.iter().map(|w| w.text.as_str()).collect::<Vec<_>>()))
                .collect::<Vec<_>>(),
            vec![("cfn-init", vec!["-r", "R"]), ("cfn-signal", vec!["-e", "0", "--resource", "G"])]
        );
    }

    #[test]
    fn a_cloud_config_runcmd_item_is_a_command() {
        let script = "#cloud-config\nruncmd:\n  - /opt/aws/bin/cfn-init -v -r R --configsets a,b\n";
        let calls = calls(script);
        assert_eq!(calls.len(), 1);
        assert_eq!(
            calls[0].arguments.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(),
            ["-v", "-r", "R", "--configsets", "a,b"]
        );
    }

    #[test]
    fn a_word_after_the_start_may_hold_a_hash_and_unclosed_quotes_end_the_script() {
        assert_eq!(texts("echo a#b 'open"), vec![vec!["echo", "a#b", "open"]]);
        assert_eq!(texts("echo \"open $(x"), vec![vec!["echo", "open $(x"], vec!["x"]]);
        assert_eq!(texts("a\\"), vec![vec!["a"]]);
    }

    proptest! {
        /// Never a panic, every word's offset inside the script, and a bounded number of
        /// commands on any text, shell-like or not.
        #[test]
        fn the_reader_never_panics_and_stays_bounded(
            script in proptest::string::string_regex("([a-z$()`'\"\\\\;&|<>#{}\\n -]|cfn-init|\\$\\(|<<-?E){0,200}").unwrap(),
            noise in ".{0,64}",
        ) {
            let script = format!("{script}{noise}");
            let commands = commands(&script);
            let words: usize = commands.iter().map(Vec::len).sum();
            // Each level of $(...) reads its text once more.
            prop_assert!(words <= (script.len() + 1) * (MAX_NESTING + 1));
            for word in commands.iter().flatten() {
                prop_assert!(word.start < script.len());
                prop_assert!(script.is_char_boundary(word.start));
            }
            let _ = calls(&script);
        }
    }
}
