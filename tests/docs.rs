//! What a newcomer reads and types: the man pages and shell completions are
//! what the command-line definition generates (and work), and what the
//! documentation promises holds.
//!
//! `AGUI_BLESS=1 cargo test --test docs` rewrites `man/` and `completions/`.

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use agui_translate::cli::Args;
use clap::{Command, CommandFactory};
use clap_complete::Shell;

const BIN_NAME: &str = "agui-translate";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Writes `want` to `rel` under AGUI_BLESS, else checks that it is there.
fn fresh(rel: &str, want: &[u8]) {
    let path = root().join(rel);
    if std::env::var_os("AGUI_BLESS").is_some() {
        std::fs::write(&path, want).unwrap();
        return;
    }
    let have = std::fs::read(&path).unwrap_or_default();
    assert!(
        have == want,
        "{rel} is stale: run `AGUI_BLESS=1 cargo test --test docs` and review the diff"
    );
}

// ---------------------------------------------------------------- man pages

/// The pages: the translation (with the commands' list), then one per
/// command, named `agui-translate-COMMAND`.
fn man_pages() -> Vec<(String, Vec<u8>)> {
    let top = Args::command()
        .bin_name(BIN_NAME)
        .disable_help_subcommand(true);
    let subs: Vec<Command> = top
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let mut names = vec![BIN_NAME.to_owned()];
    names.extend(subs.iter().map(|s| format!("{BIN_NAME}-{}", s.get_name())));
    let mut pages = vec![(names[0].clone(), man_page(&top, BIN_NAME, &names))];
    for sub in subs {
        // clap keeps names as `&'static str`.
        let title: &'static str = format!("{BIN_NAME}-{}", sub.get_name()).leak();
        let shown = format!("{BIN_NAME} {}", sub.get_name());
        let page = man_page(
            &sub.name(title)
                .version(env!("CARGO_PKG_VERSION"))
                .bin_name(shown.clone()),
            &shown,
            &names,
        );
        pages.push((title.to_owned(), page));
    }
    pages
}

/// One page: clap_mangen's title, name, description, options and commands,
/// and our own synopsis (with each option's value) and the sections the
/// `--help` epilogue holds (`Examples:` becomes EXAMPLES, `Exit status:`
/// EXIT STATUS, …), then SEE ALSO.
fn man_page(cmd: &Command, shown: &str, all_pages: &[String]) -> Vec<u8> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out).unwrap();
    man.render_name_section(&mut out).unwrap();
    out.extend_from_slice(b".SH SYNOPSIS\n");
    out.extend_from_slice(synopsis(cmd, shown).as_bytes());
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out.extend_from_slice(b".br\n");
        let shown = format!("{shown} {}", sub.get_name());
        out.extend_from_slice(synopsis(sub, &shown).as_bytes());
    }
    man.render_description_section(&mut out).unwrap();
    man.render_options_section(&mut out).unwrap();
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out).unwrap();
    }
    if let Some(epilogue) = cmd.get_after_help() {
        out.extend_from_slice(epilogue_sections(&epilogue.to_string()).as_bytes());
    }
    let title = cmd.get_name();
    let others: Vec<String> = all_pages
        .iter()
        .filter(|p| *p != title)
        .map(|p| format!("\\fB{}\\fR(1)", roff(p)))
        .collect();
    out.extend_from_slice(format!(".SH \"SEE ALSO\"\n{}\n", others.join(", ")).as_bytes());
    man.render_version_section(&mut out).unwrap();
    out
}

/// Text for roff: hyphens as `\-`, no line read as a request.
fn roff(text: &str) -> String {
    let escaped = text
        .replace('\\', "\\e")
        .replace('-', "\\-")
        .replace('\'', "\\*(Aq");
    if escaped.starts_with('.') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// `agui-translate [-f|--from CLI] [--stats[=FORMAT]] [--allow-tool TOOL]... [FILE]...`
fn synopsis(cmd: &Command, shown: &str) -> String {
    let mut options = format!("\\fB{}\\fR", roff(shown));
    let mut positionals = String::new();
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let value = arg
            .get_value_names()
            .map(|v| v.join(" "))
            .unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
        let many = matches!(arg.get_action(), clap::ArgAction::Append);
        let dots = if many { "..." } else { "" };
        let name = match (arg.get_short(), arg.get_long()) {
            (Some(s), Some(l)) => format!("\\fB\\-{s}\\fR|\\fB\\-\\-{}\\fR", roff(l)),
            (Some(s), None) => format!("\\fB\\-{s}\\fR"),
            (None, Some(l)) => format!("\\fB\\-\\-{}\\fR", roff(l)),
            (None, None) => {
                let dashes = if arg.is_last_set() { "\\-\\- " } else { "" };
                let v = format!("{dashes}\\fI{}\\fR{dots}", roff(&value));
                positionals += &if arg.is_required_set() {
                    format!(" {v}")
                } else {
                    format!(" [{v}]")
                };
                continue;
            }
        };
        let optional_value = arg.get_num_args().is_some_and(|n| n.min_values() == 0);
        let spec = match (arg.get_action().takes_values(), optional_value) {
            (false, _) => name,
            (true, true) => format!("{name}[=\\fI{}\\fR]", roff(&value)),
            (true, false) => format!("{name} \\fI{}\\fR", roff(&value)),
        };
        options += &format!(" [{spec}]{dots}");
    }
    options + &positionals + "\n"
}

/// The `--help` epilogue as man sections: `Heading:` starts a section
/// (text after the colon is its first paragraph), `  WORD  text` is a
/// tagged item, other indented lines are shown as typed, the rest is text.
fn epilogue_sections(text: &str) -> String {
    let mut out = String::new();
    let mut verbatim = false;
    let mut after_item = false;
    for line in text.lines() {
        let heading = line.split_once(':').filter(|(h, _)| {
            !h.is_empty()
                && !h.starts_with(' ')
                && h.chars().all(|c| c.is_ascii_alphabetic() || c == ' ')
        });
        let item = line
            .strip_prefix("  ")
            .filter(|l| !l.starts_with(' '))
            .and_then(|l| l.split_once("  "))
            .filter(|(tag, _)| !tag.contains(' '));
        let is_verbatim = line.starts_with("  ") && item.is_none();
        if verbatim && !is_verbatim {
            out += ".fi\n";
            verbatim = false;
        }
        if after_item && item.is_none() && !line.trim().is_empty() {
            out += ".PP\n";
        }
        after_item = item.is_some();
        if let Some((h, rest)) = heading {
            out += &format!(".SH \"{}\"\n", h.to_uppercase());
            if !rest.trim().is_empty() {
                out += &format!("{}\n", roff(rest.trim()));
            }
        } else if let Some((tag, what)) = item {
            out += &format!(".TP\n\\fB{}\\fR\n{}\n", roff(tag), roff(what.trim()));
        } else if is_verbatim {
            if !verbatim {
                out += ".PP\n.nf\n";
                verbatim = true;
            }
            out += &format!("{}\n", roff(line));
        } else if line.trim().is_empty() {
            out += ".PP\n";
        } else {
            out += &format!("{}\n", roff(line));
        }
    }
    if verbatim {
        out += ".fi\n";
    }
    out
}

#[test]
fn man_pages_are_fresh() {
    let pages = man_pages();
    for (name, page) in &pages {
        fresh(&format!("man/{name}.1"), page);
    }
    // No page the repository does not have, and none it has that is not made.
    let mut on_disk: Vec<String> = std::fs::read_dir(root().join("man"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    on_disk.sort();
    let mut made: Vec<String> = pages.iter().map(|(n, _)| format!("{n}.1")).collect();
    made.sort();
    assert_eq!(on_disk, made);
}

#[test]
fn man_pages_have_the_usual_sections_and_name_only_real_pages() {
    let pages = man_pages();
    let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
    for (name, page) in &pages {
        let text = String::from_utf8(page.clone()).unwrap();
        for section in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "OPTIONS",
            "\"EXAMPLES\"",
            "\"EXIT STATUS\"",
            "\"SEE ALSO\"",
        ] {
            assert!(
                text.contains(&format!("\n.SH {section}\n")),
                "{name}: no {section}"
            );
        }
        assert!(!text.contains(".SH EXTRA"), "{name}");
        // Every page named is one of ours.
        for (i, _) in text.match_indices("(1)") {
            let start = text[..i]
                .rfind(|c: char| c.is_whitespace() || c == 'B' || c == ',')
                .unwrap();
            let named = text[start + 1..i]
                .trim_end_matches("\\fR")
                .replace("\\-", "-");
            assert!(names.contains(&named.as_str()), "{name} names {named}(1)");
        }
    }
    let top = String::from_utf8(pages[0].1.clone()).unwrap();
    assert!(
        top.contains("[\\fB\\-f\\fR|\\fB\\-\\-from\\fR \\fICLI\\fR]"),
        "the synopsis shows each option's value"
    );
    assert!(top.contains("[\\fB\\-\\-stats\\fR[=\\fIFORMAT\\fR]]"));
    assert!(top.contains("\\fBagui\\-translate run\\fR"));
    let run = String::from_utf8(pages[1].1.clone()).unwrap();
    assert!(run.contains("[\\fB\\-\\-allow\\-tool\\fR \\fITOOL\\fR]..."));
    assert!(run.contains("[\\-\\- \\fICLI ARGS\\fR...]"));
}

/// Where `man` is installed, each page renders without a warning.
#[test]
fn man_pages_render() {
    let Ok(probe) = StdCommand::new("groff").arg("--version").output() else {
        eprintln!("groff is not installed: man pages not rendered");
        return;
    };
    assert!(probe.status.success());
    for (name, _) in man_pages() {
        let out = StdCommand::new("groff")
            .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
            .arg(root().join(format!("man/{name}.1")))
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{name}");
    }
}

// ---------------------------------------------------------------- completions

/// The completion script for `shell`.
fn completion(shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Args::command(), BIN_NAME, &mut out);
    if shell != Shell::Bash {
        return out;
    }
    // clap_complete 4.6 escapes the hyphen of the binary's name after
    // joining the subcommand path in its case labels
    // (`agui__subcmd__translate__subcmd__run`) but before joining where it
    // sets the state (`agui__translate__subcmd__run`), so no subcommand ever
    // completes (clap-rs/clap#6421). Use the spelling the state is set with.
    String::from_utf8(out)
        .unwrap()
        .replace(
            "agui__subcmd__translate__subcmd__",
            "agui__translate__subcmd__",
        )
        .into_bytes()
}

const COMPLETIONS: [(Shell, &str); 3] = [
    (Shell::Bash, "completions/agui-translate.bash"),
    (Shell::Zsh, "completions/_agui-translate"),
    (Shell::Fish, "completions/agui-translate.fish"),
];

#[test]
fn completions_are_fresh() {
    for (shell, file) in COMPLETIONS {
        fresh(file, &completion(shell));
    }
}

/// Every state the bash script can reach has its case, and every case is
/// reachable.
#[test]
fn bash_completion_states_match() {
    let script = String::from_utf8(completion(Shell::Bash)).unwrap();
    let set: Vec<&str> = script
        .lines()
        .filter_map(|l| l.trim().strip_prefix("cmd=\""))
        .map(|l| l.trim_end_matches('"'))
        .filter(|l| !l.is_empty())
        .collect();
    let cases: Vec<&str> = script
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("agui") && l.ends_with(')') && !l.contains(','))
        .map(|l| l.trim_end_matches(')'))
        .collect();
    let mut set_sorted = set.clone();
    set_sorted.sort();
    set_sorted.dedup();
    let mut cases_sorted = cases.clone();
    cases_sorted.sort();
    assert_eq!(set_sorted, cases_sorted);
    assert!(cases.contains(&"agui__translate__subcmd__run"), "{cases:?}");
}

/// What bash offers for the last word of `words` (`""` for a new word),
/// using the committed script as a user's shell would.
fn bash_complete(words: &[&str]) -> Vec<String> {
    let script = root().join("completions/agui-translate.bash");
    let out = StdCommand::new("bash")
        .arg("--norc")
        .arg("-c")
        .arg(
            r#"source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
_agui__translate agui-translate "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}""#,
        )
        .arg("complete")
        .arg(&script)
        .args(words)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_the_top_level_and_every_command() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["agui-translate", "--fr"], &["--from"]),
        (
            &["agui-translate", "--from", "c"],
            &["codex", "claude", "codex-app-server"],
        ),
        (
            &["agui-translate", "--tool-names", ""],
            &["native", "canonical"],
        ),
        (&["agui-translate", "ch"], &["check"]),
        (&["agui-translate", "run", "--ap"], &["--approval"]),
        (&["agui-translate", "run", "gem"], &["gemini"]),
        (&["agui-translate", "run", "--approval", "y"], &["yolo"]),
        (&["agui-translate", "run", "--tool-n"], &["--tool-names"]),
        (&["agui-translate", "check", "--h"], &["--help"]),
        (&["agui-translate", "help", "r"], &["run"]),
    ];
    for (words, want) in cases {
        assert_eq!(&bash_complete(words), want, "{words:?}");
    }
    // Every command completes its own options.
    for sub in Args::command().get_subcommands() {
        let name = sub.get_name();
        if name == "help" {
            continue;
        }
        let offered = bash_complete(&["agui-translate", name, "--"]);
        for long in sub.get_arguments().filter_map(|a| a.get_long()) {
            assert!(
                offered.contains(&format!("--{long}")),
                "{name} --{long}: {offered:?}"
            );
        }
    }
}

/// The zsh and fish scripts parse, where those shells are installed (CI
/// installs them).
#[test]
fn zsh_and_fish_completions_parse() {
    for (shell, args) in [("zsh", ["-n"]), ("fish", ["--no-execute"])] {
        let file = match shell {
            "zsh" => "completions/_agui-translate",
            _ => "completions/agui-translate.fish",
        };
        match StdCommand::new(shell)
            .args(args)
            .arg(root().join(file))
            .output()
        {
            Err(_) => eprintln!("{shell} is not installed: {file} not checked"),
            Ok(out) => assert!(
                out.status.success() && out.stderr.is_empty(),
                "{file}: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }
}

// ---------------------------------------------------------------- promises

/// `run --check` exits 0 when all three CLIs are installed, 1 when one is
/// missing (as `run --help` and the README say).
#[test]
fn run_check_exit_statuses() {
    let fake: PathBuf = root().join("tests/fake/cli");
    let status = |gemini: &Path| {
        StdCommand::new(env!("CARGO_BIN_EXE_agui-translate"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("AGUI_GEMINI_CLI", gemini)
            .env("AGUI_CODEX_CLI", &fake)
            .env("AGUI_CLAUDE_CLI", &fake)
            .args(["run", "--check"])
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(status(&fake), Some(0));
    assert_eq!(status(Path::new("/nonexistent/gemini")), Some(1));
}

// ---------------------------------------------------------------- examples

/// README.md and every page under docs/.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// The fenced blocks of `lang` in a markdown text: (first line number, body).
fn fenced(text: &str, lang: &str) -> Vec<(usize, Vec<String>)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, Vec<String>, bool)> = None;
    for (i, line) in text.lines().enumerate() {
        match current.as_mut() {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    current = Some((i + 2, Vec::new(), info.trim() == lang));
                }
            }
            Some((_, body, _)) if line.trim_start() != "```" => body.push(line.to_owned()),
            Some(_) => {
                let (start, body, wanted) = current.take().unwrap();
                if wanted {
                    blocks.push((start, body));
                }
            }
        }
    }
    blocks
}

/// Every `console` example runs, from the repository's root and with this
/// build first on PATH, and prints what the documentation shows.
#[test]
fn console_examples_print_what_they_show() {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_agui-translate"))
        .parent()
        .unwrap()
        .to_owned();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let mut ran = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(root()).unwrap().display().to_string();
        for (line, body) in fenced(&text, "console") {
            let mut examples: Vec<(String, Vec<String>)> = Vec::new();
            for l in body {
                match l.strip_prefix("$ ") {
                    Some(cmd) => examples.push((cmd.to_owned(), Vec::new())),
                    None => examples
                        .last_mut()
                        .unwrap_or_else(|| panic!("{name}:{line}: output before a command"))
                        .1
                        .push(l),
                }
            }
            for (cmd, want) in examples {
                let out = StdCommand::new("sh")
                    .arg("-c")
                    .arg(&cmd)
                    .current_dir(root())
                    .env("PATH", &path)
                    .output()
                    .unwrap();
                if out.status.code() == Some(127) {
                    // Written past the harness's capture, to be seen.
                    use std::io::Write;
                    let _ = writeln!(
                        std::io::stderr(),
                        "SKIPPED {name}:{line}: a program it uses is not installed: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    );
                    continue;
                }
                let have = String::from_utf8_lossy(&out.stdout);
                assert!(
                    out.status.success(),
                    "{name}:{line}: {cmd}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let mut want = want.join("\n");
                want.push('\n');
                assert_eq!(have, want, "{name}:{line}: {cmd}");
                ran += 1;
            }
        }
    }
    assert!(ran >= 4, "only {ran} examples ran");
}

/// A shell line's simple commands, as words: quotes removed, split at
/// `|`, `;`, `&`, `<` and `>`, comments dropped.
fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    let end_word = |commands: &mut Vec<Vec<String>>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            commands.last_mut().unwrap().push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => word.extend(chars.next()),
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                word.extend(chars.next());
                in_word = true;
            }
            (None, '#') if !in_word => break,
            (None, c) if c.is_whitespace() => end_word(&mut commands, &mut word, &mut in_word),
            (None, '|' | ';' | '&' | '<' | '>') => {
                end_word(&mut commands, &mut word, &mut in_word);
                commands.push(Vec::new());
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    end_word(&mut commands, &mut word, &mut in_word);
    commands.retain(|c| !c.is_empty());
    commands
}

#[test]
fn simple_commands_are_split_as_a_shell_would() {
    assert_eq!(
        simple_commands(r#"echo '-v: a | b' | agui-translate run gemini -m "x y" > out # note"#),
        vec![
            vec!["echo", "-v: a | b"],
            vec!["agui-translate", "run", "gemini", "-m", "x y"],
            vec!["out"],
        ]
    );
}

/// Every `agui-translate` command in the `sh` examples is one the program
/// accepts: no option renamed or removed under the documentation's feet.
#[test]
fn sh_examples_use_real_options() {
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(root()).unwrap().display().to_string();
        for (line, body) in fenced(&text, "sh") {
            for (i, l) in body.iter().enumerate() {
                for words in simple_commands(l) {
                    if words[0] != BIN_NAME {
                        continue;
                    }
                    if let Err(err) = agui_translate::cli::parse_from(&words) {
                        use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
                        assert!(
                            matches!(err.kind(), DisplayHelp | DisplayVersion),
                            "{name}:{}: {l}\n{err}",
                            line + i
                        );
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 10, "only {checked} commands checked");
}
