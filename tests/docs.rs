//! What a newcomer reads and types: the man pages and shell completions are
//! what the command-line definition generates (and work), and what the
//! documentation promises holds.
//!
//! `AGUI_BLESS=1 cargo test --test docs` rewrites `man/` and `completions/`.

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use agui_translate::cli;

mod common;
use clap::Command;
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
    // Not wrapped: roff fills the paragraphs to the reader's width.
    let top = cli::command_at(0)
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
        // The version goes into the page's footer; the command itself has
        // no --version (only the program has).
        let page = man_page(
            &sub.name(title)
                .version(env!("CARGO_PKG_VERSION"))
                .disable_version_flag(true)
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
    let about = cmd.get_long_about().or(cmd.get_about()).unwrap();
    out.extend_from_slice(b".SH DESCRIPTION\n");
    out.extend_from_slice(help_sections(&about.to_string(), false).as_bytes());
    man.render_options_section(&mut out).unwrap();
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out).unwrap();
    }
    if let Some(epilogue) = cmd.get_after_help() {
        out.extend_from_slice(help_sections(&epilogue.to_string(), true).as_bytes());
    }
    let title = cmd.get_name();
    let others: Vec<String> = all_pages
        .iter()
        .filter(|p| *p != title)
        .map(|p| format!("\\fB{}\\fR(1)", roff(p)))
        .collect();
    out.extend_from_slice(format!(".SH \"SEE ALSO\"\n{}\n", others.join(", ")).as_bytes());
    man.render_version_section(&mut out).unwrap();
    code_in_bold(&String::from_utf8(out).unwrap()).into_bytes()
}

/// The help's `code` spans in bold, as man pages show what is typed (a
/// line holds each span whole: the help is not wrapped here).
fn code_in_bold(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    for line in page.lines() {
        let parts: Vec<&str> = line.split('`').collect();
        assert!(parts.len() % 2 == 1, "a backtick without its pair: {line}");
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                out += if i % 2 == 1 { "\\fB" } else { "\\fR" };
            }
            out += part;
        }
        out.push('\n');
    }
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

/// Help text as roff: with `headings`, `Heading:` starts a section (text
/// after the colon is its first paragraph; the `--help` epilogue:
/// `Examples:` becomes EXAMPLES); `  WORD  text` is a tagged item (lines
/// indented further right after it go on with its text), other indented
/// lines are shown as typed, the rest is text.
fn help_sections(text: &str, headings: bool) -> String {
    let mut out = String::new();
    let mut verbatim = false;
    let mut after_item = false;
    for line in text.lines() {
        let heading = line.split_once(':').filter(|(h, _)| {
            headings
                && !h.is_empty()
                && !h.starts_with(' ')
                && h.chars().all(|c| c.is_ascii_alphabetic() || c == ' ')
        });
        let item = line
            .strip_prefix("  ")
            .filter(|l| !l.starts_with(' '))
            .and_then(|l| l.split_once("  "))
            .filter(|(tag, _)| !tag.contains(' '));
        let goes_on = after_item && item.is_none() && line.starts_with("   ");
        if goes_on {
            out += &format!("{}\n", roff(line.trim()));
            continue;
        }
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
            // Indented as in the help: the text of each item begins in one
            // column, however long its tag. Its words are not hyphenated (a
            // command line, an option).
            let indent = tag.len() + 2 + what.len() - what.trim_start().len();
            let words: Vec<String> = what
                .split_whitespace()
                .map(|w| format!("\\%{}", roff(w)))
                .collect();
            out += &format!(".TP {indent}\n\\fB{}\\fR\n{}\n", roff(tag), words.join(" "));
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

/// Where `groff` is installed, each page renders without a warning, as
/// `man` runs it (through preconv, for a terminal) and as plain `groff
/// -man` does (CI installs it; a skip is refused under `AGUI_NO_SKIP=1`).
#[test]
fn man_pages_render() {
    let Ok(probe) = StdCommand::new("groff").arg("--version").output() else {
        skip("man pages render", "groff is not installed");
        return;
    };
    assert!(probe.status.success());
    for (name, _) in man_pages() {
        for args in [
            &["-k", "-man", "-Tutf8", "-ww", "-z"][..],
            &["-man", "-ww", "-z"],
            &["-man", "-Tascii", "-ww", "-z"],
        ] {
            let out = StdCommand::new("groff")
                .args(args)
                .arg(root().join(format!("man/{name}.1")))
                .output()
                .unwrap();
            assert!(out.status.success(), "{name}");
            assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{name}: {args:?}");
        }
    }
}

/// The pages are plain ASCII (nothing for a troff without preconv to warn
/// about), and the help's `code` is set in bold, not shown with its
/// backticks.
#[test]
fn man_pages_are_ascii_and_show_no_backticks() {
    for (name, page) in man_pages() {
        let text = String::from_utf8(page).unwrap();
        for (i, line) in text.lines().enumerate() {
            assert!(line.is_ascii(), "{name}:{}: {line}", i + 1);
            assert!(!line.contains('`'), "{name}:{}: {line}", i + 1);
        }
    }
    let run = String::from_utf8(man_pages()[1].1.clone()).unwrap();
    assert!(run.contains("\\fBauto\\-edit\\fR"), "{run}");
}

// ---------------------------------------------------------------- the CLIs

/// Whitespace as single spaces, so that a name wrapped across lines is found.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `words` that `text` (at `place`) does not name: `titles` as
/// written, or `names` in any case (`Copilot CLI`, `OpenCode`).
fn unnamed(place: &str, text: &str, words: &[&str], any_case: bool) -> Vec<String> {
    let text = one_line(text);
    let lower = text.to_lowercase();
    words
        .iter()
        .filter(|w| {
            if any_case {
                !lower.contains(&w.to_lowercase())
            } else {
                !text.contains(*w)
            }
        })
        .map(|w| format!("{place}: {w}"))
        .collect()
}

/// Every place that lists the CLIs names each one of the dialect table
/// (`agui_translate::dialect::ALL`): a CLI added to the table and not named
/// in one of them fails here, naming the place.
#[test]
fn every_list_of_the_clis_names_each_one() {
    use agui_translate::dialect;
    let titles: Vec<&str> = dialect::clis().map(|d| d.title).collect();
    let names: Vec<&str> = dialect::clis().map(|d| d.name).collect();
    let all: Vec<&str> = dialect::ALL.iter().map(|s| s.name).collect();
    assert!(names.len() >= 6 && all.len() > names.len(), "{all:?}");
    let mut missing: Vec<String> = Vec::new();
    let help = |cmd: &mut Command| cmd.render_long_help().to_string();
    let mut top = cli::command_at(0);
    missing.extend(unnamed("--help", &help(&mut top), &titles, false));
    for (sub, words) in [("run", &names), ("serve", &names)] {
        let mut cmd = top.find_subcommand_mut(sub).unwrap().clone();
        missing.extend(unnamed(
            &format!("{sub} --help"),
            &help(&mut cmd),
            words,
            true,
        ));
    }
    let mut run = top.find_subcommand_mut("run").unwrap().clone();
    let env_vars: Vec<&str> = dialect::clis().map(|d| d.env_var).collect();
    missing.extend(unnamed(
        "run --help, Environment",
        &help(&mut run),
        &env_vars,
        false,
    ));
    let rows: Vec<&str> = cli::RUN_COMMAND_LINES.iter().map(|(c, _)| *c).collect();
    if rows != names {
        missing.push(format!(
            "run --help, the command lines: {rows:?}, not {names:?}"
        ));
    }

    for (page, words, any_case) in [
        ("man/agui-translate.1", &titles, false),
        ("man/agui-translate-run.1", &names, true),
        ("man/agui-translate-serve.1", &names, true),
    ] {
        let text = std::fs::read_to_string(root().join(page)).unwrap();
        let description = text.split(".SH DESCRIPTION").nth(1).unwrap();
        let description = description.split("\n.SH ").next().unwrap();
        missing.extend(unnamed(
            &format!("{page}, DESCRIPTION"),
            description,
            words,
            any_case,
        ));
    }

    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let description = manifest
        .lines()
        .find(|l| l.starts_with("description = "))
        .unwrap();
    missing.extend(unnamed(
        "Cargo.toml, description",
        description,
        &titles,
        false,
    ));

    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let first = readme.split("\n\n").nth(1).unwrap();
    missing.extend(unnamed("README.md, first paragraph", first, &titles, false));
    let usage = &fenced(&readme[readme.find("## Usage").unwrap()..], "")[0].1;
    for (start, want) in [
        (
            "agui-translate [--from ",
            ["auto"].iter().chain(&all).copied().collect::<Vec<_>>(),
        ),
        ("agui-translate run ", names.clone()),
        ("agui-translate serve ", names.clone()),
    ] {
        let line = usage.iter().find(|l| l.starts_with(start)).unwrap();
        let listed: Vec<&str> = line[start.len()..]
            .split([' ', ']'])
            .next()
            .unwrap()
            .split('|')
            .collect();
        if listed != want {
            missing.push(format!(
                "README.md, usage {start}...: {listed:?}, not {want:?}"
            ));
        }
    }

    let undetected = StdCommand::new(env!("CARGO_BIN_EXE_agui-translate"))
        .arg(root().join("README.md"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&undetected.stderr);
    let error = stderr
        .lines()
        .find(|l| l.contains("could not tell which CLI wrote this input"))
        .unwrap_or_else(|| panic!("no detection error: {stderr}"));
    missing.extend(unnamed("the detection error", error, &titles, false));

    let serve = std::fs::read_to_string(root().join("docs/serve.md")).unwrap();
    for (list, starts) in [
        ("the sessions resumed", "resumes it:"),
        ("--state-dir", "- `--state-dir DIR`"),
        ("what each CLI can do", "- What each CLI can do:"),
    ] {
        let at = serve
            .find(starts)
            .unwrap_or_else(|| panic!("docs/serve.md: {starts}"));
        let item = serve[at..].split("\n- ").next().unwrap();
        missing.extend(unnamed(
            &format!("docs/serve.md, {list}"),
            item,
            &names,
            true,
        ));
    }
    assert!(missing.is_empty(), "CLIs not named: {missing:#?}");
}

// ---------------------------------------------------------------- completions

/// The long names of the hidden options (`--session-file`, which only
/// `serve` gives `run`).
fn hidden_options() -> Vec<String> {
    let top = cli::command();
    std::iter::once(&top)
        .chain(top.get_subcommands())
        .flat_map(|c| c.get_arguments())
        .filter(|a| a.is_hide_set())
        .filter_map(|a| a.get_long().map(str::to_owned))
        .collect()
}

/// The completion script for `shell`.
fn completion(shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cli::command(), BIN_NAME, &mut out);
    let mut text = String::from_utf8(out).unwrap();
    // clap_complete 4.6 offers hidden options as well: they are taken out
    // (zsh and fish describe each option on a line of its own; bash lists
    // it among the words offered and has a case for its value).
    for long in hidden_options() {
        let option = format!("--{long}");
        let mut kept = String::with_capacity(text.len());
        let mut lines = text.split_inclusive('\n');
        while let Some(line) = lines.next() {
            let trimmed = line.trim();
            if trimmed.starts_with(&format!("'{option}=["))
                || trimmed.starts_with(&format!("'{option}["))
                || trimmed.contains(&format!(" -l {long} "))
            {
                continue;
            }
            if trimmed == format!("{option})") {
                // The bash case, up to its `;;`.
                for rest in lines.by_ref() {
                    if rest.trim() == ";;" {
                        break;
                    }
                }
                continue;
            }
            kept.push_str(&line.replace(&format!(" {option} "), " "));
        }
        text = kept;
    }
    if shell != Shell::Bash {
        return text.into_bytes();
    }
    // clap_complete 4.6 escapes the hyphen of the binary's name after
    // joining the subcommand path in its case labels
    // (`agui__subcmd__translate__subcmd__run`) but before joining where it
    // sets the state (`agui__translate__subcmd__run`), so no subcommand ever
    // completes (clap-rs/clap#6421). Use the spelling the state is set with.
    text.replace(
        "agui__subcmd__translate__subcmd__",
        "agui__translate__subcmd__",
    )
    .into_bytes()
}

/// No script offers a hidden option.
#[test]
fn completions_offer_no_hidden_option() {
    let hidden = hidden_options();
    assert_eq!(
        hidden,
        [
            "input-marker",
            "keep-turns",
            "session-file",
            "plan-file",
            "state-file"
        ]
    );
    for (_, file) in COMPLETIONS {
        let script = std::fs::read_to_string(root().join(file)).unwrap();
        for option in &hidden {
            assert!(!script.contains(option.as_str()), "{file}: {option}");
        }
    }
    assert_eq!(
        bash_complete(&["agui-translate", "run", "--se"]),
        [] as [&str; 0]
    );
    assert_eq!(
        bash_complete(&["agui-translate", "run", "--ti"]),
        ["--timeout"]
    );
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
            &["codex", "claude", "codex-app-server", "copilot"],
        ),
        (
            &["agui-translate", "--tool-names", ""],
            &["native", "canonical"],
        ),
        (&["agui-translate", "ch"], &["check"]),
        (
            &["agui-translate", "run", "--ap"],
            &["--approval", "--approval-timeout"],
        ),
        (&["agui-translate", "run", "--approval", "as"], &["ask"]),
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
    for sub in cli::command().get_subcommands() {
        let name = sub.get_name();
        if name == "help" {
            continue;
        }
        let offered = bash_complete(&["agui-translate", name, "--"]);
        let shown = sub.get_arguments().filter(|a| !a.is_hide_set());
        for long in shown.filter_map(|a| a.get_long()) {
            assert!(
                offered.contains(&format!("--{long}")),
                "{name} --{long}: {offered:?}"
            );
        }
    }
}

/// The zsh and fish scripts parse, where those shells are installed (CI
/// installs them; a skip is refused under `AGUI_NO_SKIP=1`).
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
            Err(_) => skip(
                &format!("{file} parses"),
                &format!("{shell} is not installed"),
            ),
            Ok(out) => assert!(
                out.status.success() && out.stderr.is_empty(),
                "{file}: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }
}

// ---------------------------------------------------------------- promises

/// `run --check` exits 0 when every CLI is installed, 1 when one is
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
            .env("AGUI_QWEN_CLI", &fake)
            .env("AGUI_COPILOT_CLI", &fake)
            .env("AGUI_OPENCODE_CLI", &fake)
            .args(["run", "--check"])
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(status(&fake), Some(0));
    assert_eq!(status(Path::new("/nonexistent/gemini")), Some(1));
}

/// The man pages of the commands do not list `-V, --version`, which the
/// commands refuse; the program's own page does, and it works.
#[test]
fn only_the_program_has_a_version_option() {
    for (name, page) in man_pages() {
        let text = String::from_utf8(page).unwrap();
        let listed = text.contains("\\fB\\-V\\fR, \\fB\\-\\-version\\fR");
        assert_eq!(listed, name == BIN_NAME, "{name}");
    }
    let bin = env!("CARGO_BIN_EXE_agui-translate");
    for sub in ["check", "run", "serve"] {
        let out = StdCommand::new(bin)
            .args([sub, "--version"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{sub} --version");
    }
    let out = StdCommand::new(bin).arg("--version").output().unwrap();
    assert!(out.status.success());
}

// ---------------------------------------------------------------- exit status

/// The exit statuses of every command as one markdown table, from the table
/// `--help` shows its part of.
fn exit_status_table() -> String {
    let mut table = String::from(
        "| status | `agui-translate [FILE]...` | `check` | `run` | `serve` |\n|---|---|---|---|---|\n",
    );
    for s in cli::EXIT_STATUSES {
        table += &format!(
            "| {} | {} | {} | {} | {} |\n",
            s.status, s.translate, s.check, s.run, s.serve
        );
    }
    table
}

/// The README's "Exit status" section holds the one table (rewritten under
/// AGUI_BLESS), and each command's `--help` lists its column of it.
#[test]
fn the_exit_status_table_is_the_one_in_the_readme_and_in_help() {
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let heading = "\n## Exit status\n\n";
    let start = readme
        .find(heading)
        .expect("README has an Exit status section")
        + heading.len();
    let len = readme[start..]
        .split_inclusive('\n')
        .take_while(|l| l.starts_with('|'))
        .map(str::len)
        .sum::<usize>();
    let want = exit_status_table();
    if std::env::var_os("AGUI_BLESS").is_some() {
        let mut text = readme.clone();
        text.replace_range(start..start + len, &want);
        std::fs::write(&path, text).unwrap();
    } else {
        assert_eq!(
            readme[start..start + len],
            want,
            "README.md's exit statuses are stale: run `AGUI_BLESS=1 cargo test --test docs`"
        );
    }
    let bin = env!("CARGO_BIN_EXE_agui-translate");
    for (which, args) in [
        ("translate", &["--help"][..]),
        ("check", &["check", "--help"]),
        ("run", &["run", "--help"]),
        ("serve", &["serve", "--help"]),
    ] {
        let out = StdCommand::new(bin).args(args).output().unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        let part = help
            .split("\nExit status:\n")
            .nth(1)
            .expect("an Exit status part");
        let listed: Vec<&str> = part
            .lines()
            .take_while(|l| l.starts_with("  "))
            .filter(|l| !l.starts_with("   "))
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        let table: Vec<&str> = cli::EXIT_STATUSES
            .iter()
            .filter(|s| !cli::exit_meaning(s, which).is_empty())
            .map(|s| s.status)
            .collect();
        assert_eq!(listed, table, "{which}");
        // The words are the table's, wrapped.
        let words: Vec<&str> = part
            .lines()
            .take_while(|l| l.starts_with("  "))
            .flat_map(str::split_whitespace)
            .collect();
        let from_table: Vec<&str> = cli::EXIT_STATUSES
            .iter()
            .filter(|s| !cli::exit_meaning(s, which).is_empty())
            .flat_map(|s| {
                std::iter::once(s.status).chain(cli::exit_meaning(s, which).split_whitespace())
            })
            .collect();
        assert_eq!(words, from_table, "{which}");
    }
}

// ---------------------------------------------------------------- install

/// The README's lines that install the man pages and completions work on a
/// system that has none of their folders: run as written (less `sudo`),
/// into an empty folder standing for `/` and for the home directory.
#[test]
fn install_lines_work_on_a_fresh_system() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<String> = fenced(&readme, "sh")
        .into_iter()
        .flat_map(|(_, body)| body)
        .filter(|l| l.contains("install ") && (l.contains("man/") || l.contains("completions/")))
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    let fresh = std::env::temp_dir().join(format!("agui-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    std::fs::create_dir_all(&fresh).unwrap();
    for line in &lines {
        let line = line
            .trim_start_matches("sudo ")
            .replace(" /usr/", &format!(" {}/usr/", fresh.display()))
            .replace(" ~/", &format!(" {}/home/", fresh.display()));
        let out = StdCommand::new("sh")
            .arg("-c")
            .arg(&line)
            .current_dir(root())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let installed = |rel: &str| fresh.join(rel).is_file();
    assert!(installed("usr/local/share/man/man1/agui-translate.1"));
    assert!(installed("usr/local/share/man/man1/agui-translate-run.1"));
    assert!(installed(
        "usr/share/bash-completion/completions/agui-translate"
    ));
    assert!(installed(
        "usr/local/share/zsh/site-functions/_agui-translate"
    ));
    assert!(installed(
        "home/.config/fish/completions/agui-translate.fish"
    ));
    let _ = std::fs::remove_dir_all(&fresh);
}

// ---------------------------------------------------------------- examples

/// Set by CI (`.ci/run`): a test that would be skipped for want of a
/// program fails instead.
const NO_SKIP_VAR: &str = "AGUI_NO_SKIP";

/// Says on the terminal that `what` did not run and why (written past the
/// harness's capture, to be seen), or fails where skips are refused.
fn skip(what: &str, why: &str) {
    if std::env::var_os(NO_SKIP_VAR).is_some_and(|v| v == "1") {
        panic!("{what}: {why}; {NO_SKIP_VAR}=1 refuses the skip");
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {what}: {why}");
}

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

/// `PATH` with this build's `agui-translate` first.
fn path_with_this_build() -> std::ffi::OsString {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_agui-translate"))
        .parent()
        .unwrap()
        .to_owned();
    std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap()
}

/// Every `console` example runs, from the repository's root and with this
/// build first on PATH, and prints what the documentation shows.
#[test]
fn console_examples_print_what_they_show() {
    let path = path_with_this_build();
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
                    skip(
                        &format!("{name}:{line}"),
                        &format!(
                            "a program it uses is not installed: {}",
                            String::from_utf8_lossy(&out.stderr).trim()
                        ),
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

// ---------------------------------------------------------------- docs/ci.md

/// Whether `program args` runs and exits with 0.
fn runs(program: &str, args: &[&str]) -> bool {
    StdCommand::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The first program of `programs` that does not run, if any.
fn first_missing<'a>(programs: &[(&'a str, &[&str])]) -> Option<&'a str> {
    programs
        .iter()
        .find(|(program, args)| !runs(program, args))
        .map(|(program, _)| *program)
}

/// docs/ci.md's text.
fn ci_page() -> String {
    std::fs::read_to_string(root().join("docs/ci.md")).unwrap()
}

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agui-docs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `agui-translate ARGS` run in `dir`: its standard output, after checking
/// that it exited with 0.
fn translated(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = StdCommand::new(env!("CARGO_BIN_EXE_agui-translate"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A YAML document as JSON, read by PyYAML.
fn yaml_to_json(yaml: &str) -> serde_json::Value {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = StdCommand::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(yaml.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "docs/ci.md: a YAML example does not parse: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A CI job as the tests run it: scripts, each run by a shell (its argv
/// without the script's file) in the job's folder; the job stops at the
/// first that fails. `after` runs whatever happened.
#[derive(Debug)]
struct CiJob {
    scripts: Vec<(Vec<&'static str>, String)>,
    after: Vec<String>,
    /// The files the job keeps (its artifacts).
    keeps: Vec<String>,
}

/// How GitHub Actions runs a `run:` step with this `shell` (its
/// documented templates on Linux).
fn github_shell(shell: Option<&str>) -> Vec<&'static str> {
    match shell {
        None => vec!["bash", "-e"],
        Some("bash") => vec!["bash", "--noprofile", "--norc", "-eo", "pipefail"],
        Some("sh") => vec!["sh", "-e"],
        Some(other) => panic!("docs/ci.md: shell {other:?} is not one the tests know"),
    }
}

/// The GitHub Actions workflow's one job. Its `run:` steps are run, but
/// the one installing agui-translate (the tests use this build); `uses:`
/// steps (artifacts) are left to GitHub. `honour_shell: false` runs every
/// step as GitHub does when no `shell:` is set.
fn github_job(workflow: &serde_json::Value, honour_shell: bool) -> CiJob {
    let jobs = workflow["jobs"].as_object().expect("jobs");
    assert_eq!(jobs.len(), 1, "one job");
    let job = jobs.values().next().unwrap();
    let default_shell = job["defaults"]["run"]["shell"].as_str();
    let mut scripts = Vec::new();
    let mut keeps = Vec::new();
    let mut installs = 0;
    for step in job["steps"].as_array().expect("steps") {
        if let Some(uses) = step["uses"].as_str() {
            if uses.starts_with("actions/upload-artifact") {
                let paths = step["with"]["path"].as_str().expect("path");
                keeps.extend(paths.lines().map(|l| l.trim().to_owned()));
            }
            continue;
        }
        let run = step["run"].as_str().expect("a step runs or uses");
        if run.starts_with("cargo install ") {
            installs += 1;
            assert_pinned_and_cached(run, &job["steps"], "");
            continue;
        }
        assert!(
            !run.contains("${{"),
            "an expression in a step run here: {run}"
        );
        assert!(step.get("if").is_none(), "a condition on a step run here");
        let shell = step["shell"].as_str().or(default_shell);
        let shell = github_shell(shell.filter(|_| honour_shell));
        scripts.push((shell, run.to_owned()));
    }
    assert_eq!(installs, 1, "the one step not run installs agui-translate");
    assert!(scripts.len() >= 2, "{scripts:?}");
    CiJob {
        scripts,
        after: Vec::new(),
        keeps,
    }
}

/// The install (`cargo install`) names the commit (`--rev`), and what it
/// installs is cached under a key that names the same variable, so that a
/// job compiles agui-translate only when the commit changes. `cache` is
/// GitHub's steps, or GitLab's job with its `cache`; `root` where GitLab
/// installs (inside the project: its cache keeps nothing else).
fn assert_pinned_and_cached(install: &str, cache: &serde_json::Value, root: &str) {
    let rev = "AGUI_TRANSLATE_REV";
    assert!(
        install.contains("--rev ") && install.contains(rev),
        "the install names the commit: {install}"
    );
    let key_names_rev = |c: &serde_json::Value| c["key"].as_str().is_some_and(|k| k.contains(rev));
    if let Some(steps) = cache.as_array() {
        let cached = steps.iter().find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/cache"))
        });
        let with = &cached.expect("an actions/cache step")["with"];
        assert!(key_names_rev(with), "{with}");
        assert_eq!(with["path"], "~/.cargo/bin/agui-translate");
    } else {
        let cache = &cache["cache"];
        assert!(key_names_rev(cache), "{cache}");
        assert_eq!(cache["paths"][0], format!("{root}/"));
        assert!(install.contains(&format!("--root {root} ")), "{install}");
    }
}

/// The GitLab CI file's one job: `before_script` installs (not run), then
/// `script` as one bash script stopping at the first failing line, then
/// `after_script`. `pipefail: false` leaves out the `set -o pipefail` line.
fn gitlab_job(pipeline: &serde_json::Value, pipefail: bool) -> CiJob {
    let jobs = pipeline.as_object().expect("jobs");
    assert_eq!(jobs.len(), 1, "one job");
    let job = jobs.values().next().unwrap();
    let lines = |key: &str| -> Vec<String> {
        job[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key}"))
            .iter()
            .map(|l| l.as_str().unwrap().to_owned())
            .collect()
    };
    for line in lines("before_script") {
        assert!(
            line.contains("apt-get install")
                || line.starts_with("cargo install ")
                || line.starts_with("export PATH="),
            "before_script only installs: {line}"
        );
        if line.starts_with("cargo install ") {
            assert_pinned_and_cached(&line, job, ".agui-translate");
        }
    }
    let script: Vec<String> = lines("script")
        .into_iter()
        .filter(|l| pipefail || l != "set -o pipefail")
        .collect();
    assert!(script.iter().all(|l| !l.contains("$AGUI")), "{script:?}");
    let keeps = job["artifacts"]["paths"]
        .as_array()
        .expect("artifacts")
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    CiJob {
        scripts: vec![(vec!["bash", "-e"], script.join("\n"))],
        after: lines("after_script"),
        keeps,
    }
}

/// Runs `job` in `dir` with this build first on PATH: whether it passed,
/// and its log (what its scripts wrote on stdout and stderr).
fn run_ci_job(job: &CiJob, dir: &Path) -> (bool, String) {
    let path = path_with_this_build();
    let run = |shell: &[&str], script: &str| {
        let file = dir.join(".ci-step.sh");
        std::fs::write(&file, script).unwrap();
        StdCommand::new(shell[0])
            .args(&shell[1..])
            .arg(&file)
            .current_dir(dir)
            .env("PATH", &path)
            .env("LC_ALL", "C")
            .output()
            .unwrap()
    };
    let mut passed = true;
    let mut log = String::new();
    let mut add = |out: &std::process::Output| {
        log += &String::from_utf8_lossy(&out.stdout);
        log += &String::from_utf8_lossy(&out.stderr);
    };
    for (shell, script) in &job.scripts {
        let out = run(shell, script);
        add(&out);
        if !out.status.success() {
            passed = false;
            break;
        }
    }
    if !job.after.is_empty() {
        add(&run(&["bash"], &job.after.join("\n")));
    }
    (passed, log)
}

/// Recordings that translate cleanly and whose runs succeed.
const CI_LOGS: [&str; 4] = [
    "gemini/0.61.0/b_shell.jsonl",
    "codex/0.169.0/failing.jsonl",
    "claude/2.1.330/files-plain.jsonl",
    "codex-app-server/0.169.0/approval_shell.jsonl",
];

/// A job folder whose `logs/` holds [`CI_LOGS`] and `extra` (name, bytes).
fn ci_folder(name: &str, extra: Option<(&str, Vec<u8>)>) -> PathBuf {
    let dir = scratch(name);
    let logs = dir.join("logs");
    std::fs::create_dir(&logs).unwrap();
    for rel in CI_LOGS {
        std::fs::copy(
            root().join("testdata").join(rel),
            logs.join(rel.replace('/', "-")),
        )
        .unwrap();
    }
    if let Some((file, bytes)) = extra {
        std::fs::write(logs.join(file), bytes).unwrap();
    }
    dir
}

/// The GitHub Actions and GitLab CI examples parse, and their jobs, run on
/// a folder of recordings, pass and keep the plain command's events; a log
/// with a line that is not JSON, an empty log and a failed run each fail
/// them; and without `shell: bash` or `set -o pipefail` the log with a
/// line that is not JSON passes, as the page says.
#[test]
fn ci_examples_pass_and_fail_for_the_right_reasons() {
    let test = "docs/ci.md: the CI examples";
    let needed: &[(&str, &[&str])] = &[
        ("bash", &["--version"]),
        ("gzip", &["--version"]),
        ("jq", &["--version"]),
        ("python3", &["--version"]),
    ];
    if let Some(missing) = first_missing(needed) {
        return skip(test, &format!("{missing} is not installed"));
    }
    if !runs("python3", &["-c", "import yaml"]) {
        return skip(test, "PyYAML is not installed (pip install pyyaml)");
    }
    let blocks = fenced(&ci_page(), "yaml");
    assert_eq!(blocks.len(), 2, "a GitHub Actions and a GitLab CI example");
    let github = yaml_to_json(&blocks[0].1.join("\n"));
    let gitlab = yaml_to_json(&blocks[1].1.join("\n"));
    assert!(github["jobs"].is_object(), "GitHub Actions' first");
    let jobs = [
        (
            "GitHub Actions",
            github_job(&github, true),
            github_job(&github, false),
        ),
        (
            "GitLab CI",
            gitlab_job(&gitlab, true),
            gitlab_job(&gitlab, false),
        ),
    ];

    let not_json = {
        let mut bytes =
            std::fs::read(root().join("testdata/gemini/0.61.0/a_text_unicode.jsonl")).unwrap();
        bytes.extend_from_slice(b"Error: quota exceeded\n");
        bytes
    };
    let failed = std::fs::read(root().join("testdata/claude/2.0.5/http500.jsonl")).unwrap();
    for (ci, job, weakened) in &jobs {
        let slug = ci.replace(' ', "-");
        // Passes, and keeps the plain command's events and figures.
        let dir = ci_folder(&format!("{slug}-ok"), None);
        let (passed, log) = run_ci_job(job, &dir);
        assert!(passed, "{ci}: {log}");
        for kept in &job.keeps {
            assert!(dir.join(kept).is_file(), "{ci}: {kept} was not made");
        }
        let events = StdCommand::new("gzip")
            .arg("-dc")
            .arg(dir.join("events.ndjson.gz"))
            .output()
            .unwrap();
        let mut logs: Vec<String> = CI_LOGS
            .iter()
            .map(|rel| format!("logs/{}", rel.replace('/', "-")))
            .collect();
        logs.sort();
        let mut args = vec!["--strict"];
        args.extend(logs.iter().map(String::as_str));
        let plain = translated(&dir, &args);
        assert!(!plain.is_empty());
        assert!(events.stdout == plain, "{ci}: events.ndjson.gz");
        let stats: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("stats.json")).unwrap()).unwrap();
        assert_eq!(stats["runs"], CI_LOGS.len(), "{ci}: {stats}");
        assert_eq!(stats["badLines"], 0, "{ci}: {stats}");
        let _ = std::fs::remove_dir_all(&dir);

        // Fails on what should fail it.
        for (case, extra) in [
            ("not-json", ("zz-not-json.jsonl", not_json.clone())),
            ("empty", ("zz-empty.jsonl", Vec::new())),
            ("failed-run", ("zz-http500.jsonl", failed.clone())),
        ] {
            let dir = ci_folder(&format!("{slug}-{case}"), Some(extra));
            let (passed, log) = run_ci_job(job, &dir);
            assert!(!passed, "{ci}: a job with the {case} log passed: {log}");
            let _ = std::fs::remove_dir_all(&dir);
        }
        // Without pipefail, the line that is not JSON goes unnoticed.
        let dir = ci_folder(
            &format!("{slug}-not-json-no-pipefail"),
            Some(("zz-not-json.jsonl", not_json.clone())),
        );
        let (passed, log) = run_ci_job(weakened, &dir);
        assert!(passed, "{ci}: without pipefail: {log}");
        assert!(log.contains("zz-not-json.jsonl:8: "), "{ci}: {log}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The recordings the Spark example translates, by folder.
const SPARK_LOGS: [&str; 6] = [
    "gemini/0.61.0/b_shell.jsonl",
    "gemini/0.61.0/bigout.jsonl",
    "codex/0.169.0/failing.jsonl",
    "codex-app-server/0.169.0/approval_shell.jsonl",
    "claude/2.1.330/files-plain.jsonl",
    "claude/2.0.5/http500.jsonl",
];

const SPARK_TEST: &str = "spark_example_writes_what_the_plain_command_writes";

/// docs/ci.md's Spark program, run as the page runs it (`spark-submit
/// --master 'local[2]' …`) on recordings in folders, writes in its part
/// files, read in order, the bytes `agui-translate` writes for the sorted
/// list of files, split among several tasks. Skipped, saying so, where Java
/// or pyspark is missing (refused under `AGUI_NO_SKIP=1`).
#[test]
fn spark_example_writes_what_the_plain_command_writes() {
    let needed: &[(&str, &[&str])] = &[("java", &["-version"]), ("python3", &["--version"])];
    if let Some(missing) = first_missing(needed) {
        return skip(SPARK_TEST, &format!("{missing} is not installed"));
    }
    let Some(spark_home) = StdCommand::new("python3")
        .args([
            "-c",
            "import os, pyspark; print(os.path.dirname(pyspark.__file__))",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8(o.stdout).unwrap().trim()))
    else {
        return skip(SPARK_TEST, "pyspark is not installed (pip install pyspark)");
    };
    let page = ci_page();
    let programs = fenced(&page, "python");
    assert_eq!(programs.len(), 1, "one Spark program");
    let command = fenced(&page, "sh")
        .into_iter()
        .flat_map(|(_, body)| body)
        .find(|l| l.starts_with("spark-submit "))
        .expect("a spark-submit line");
    let words = simple_commands(&command).remove(0);
    let script = words.iter().position(|w| w.ends_with(".py")).unwrap();
    let (logs, out) = (&words[script + 1], &words[script + 2]);

    let dir = scratch("spark").canonicalize().unwrap();
    std::fs::write(dir.join(&words[script]), programs[0].1.join("\n") + "\n").unwrap();
    let mut inputs = Vec::new();
    for rel in SPARK_LOGS {
        let (cli, file) = rel.split_once('/').unwrap();
        let to = dir.join(logs).join(cli).join(file.replace('/', "-"));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root().join("testdata").join(rel), &to).unwrap();
        inputs.push(to.into_os_string().into_string().unwrap());
    }
    inputs.sort();

    let submit = spark_home.join("bin/spark-submit");
    let started = std::time::Instant::now();
    let run = StdCommand::new(&submit)
        // No web UI: nothing to look at, and no port to bind.
        .args(["--conf", "spark.ui.enabled=false"])
        // A JVM that starts for a short job: the quick compiler only, and
        // one collector thread (the job itself is the same).
        .args([
            "--driver-java-options",
            "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        ])
        .args(&words[1..])
        .current_dir(&dir)
        .env("PATH", path_with_this_build())
        .env("SPARK_LOCAL_IP", "127.0.0.1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{command}:\n{stderr}");

    let mut parts: Vec<PathBuf> = std::fs::read_dir(dir.join(out))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("part-")
        })
        .collect();
    parts.sort();
    let written: Vec<Vec<u8>> = parts.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(
        written.iter().filter(|w| !w.is_empty()).count() >= 2,
        "the files were split among tasks: {parts:?}"
    );
    let options: Vec<&str> = words[script + 3..].iter().map(String::as_str).collect();
    let mut args = options.clone();
    args.extend(inputs.iter().map(String::as_str));
    let plain = translated(&dir, &args);
    assert!(plain.len() > 10_000);
    assert!(
        plain.iter().any(|b| *b >= 0x80),
        "text beyond ASCII goes through"
    );
    assert!(
        written.concat() == plain,
        "the Spark output differs from {args:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "{SPARK_TEST}: Spark took {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// Where Java is missing, the Spark test says so on the terminal, and
/// fails instead under `AGUI_NO_SKIP=1`.
#[test]
fn spark_skip_is_visible_and_refused_in_ci() {
    let run = |no_skip: bool| {
        let mut cmd = StdCommand::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", SPARK_TEST])
            .env("PATH", "/nonexistent")
            .env_remove(NO_SKIP_VAR);
        if no_skip {
            cmd.env(NO_SKIP_VAR, "1");
        }
        cmd.output().unwrap()
    };
    let skipped = run(false);
    assert!(skipped.status.success());
    let stderr = String::from_utf8_lossy(&skipped.stderr);
    assert!(
        stderr.contains(&format!("SKIPPED {SPARK_TEST}: java is not installed")),
        "{stderr}"
    );
    let refused = run(true);
    assert!(!refused.status.success());
    let stdout = String::from_utf8_lossy(&refused.stdout);
    assert!(
        stdout.contains("AGUI_NO_SKIP=1 refuses the skip"),
        "{stdout}"
    );
}

/// GitHub's anchor for a markdown heading: lower case, spaces as `-`,
/// punctuation but `-` and `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every link from README.md or a page under docs/ to another of them
/// names a file that exists, and a heading in it when it names one.
#[test]
fn links_between_pages_resolve() {
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(root()).unwrap().display().to_string();
        for (at, _) in text.match_indices("](") {
            let rest = &text[at + 2..];
            let target = &rest[..rest.find(')').unwrap_or(0)];
            if target.contains("://") || !target.contains(".md") {
                continue;
            }
            let (file, heading) = target.split_once('#').unwrap_or((target, ""));
            let path = doc.parent().unwrap().join(file);
            let linked =
                std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {target}: {e}"));
            if !heading.is_empty() {
                let headings: Vec<String> = linked
                    .lines()
                    .filter_map(|l| l.strip_prefix('#'))
                    .map(|l| anchor(l.trim_start_matches('#')))
                    .collect();
                assert!(headings.iter().any(|h| h == heading), "{name}: {target}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} links checked");
}

/// The event types of an SSE text, in order.
fn sse_types(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| {
            let ty = d.split("\"type\":\"").nth(1).unwrap_or("");
            ty.split('"').next().unwrap_or("").to_owned()
        })
        .collect()
}

/// docs/serve.md's `curl` example, sent to a real `serve` (the stand-in
/// CLI answering), gets a run: the events the page shows, from RUN_STARTED
/// to RUN_FINISHED, on the thread and run it names.
#[test]
fn the_serve_page_s_curl_example_runs() {
    let text = std::fs::read_to_string(root().join("docs/serve.md")).unwrap();
    let blocks = fenced(&text, "sh");
    let (line, body) = blocks
        .iter()
        .find(|(_, b)| b.first().is_some_and(|l| l.starts_with("curl -N")))
        .expect("docs/serve.md has a `curl -N` example");
    let shown = text
        .split("```text\n")
        .nth(1)
        .and_then(|t| t.split("```").next())
        .expect("the curl example's answer follows it");
    if StdCommand::new("curl").arg("--version").output().is_err() {
        skip(&format!("docs/serve.md:{line}"), "curl is not installed");
        return;
    }
    let recording = root().join("testdata/claude/2.1.330/text-plain.jsonl");
    // As a user starts it: the token the server makes is in its state
    // directory (the default one, in the example).
    let state = std::env::temp_dir().join(format!("agui-docs-curl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&state);
    let server = common::serve_default(
        "claude",
        &["--state-dir", state.to_str().unwrap()],
        &[],
        &[("FAKE_REPLAY", &recording)],
    );
    let cmd = body
        .join("\n")
        .replace("127.0.0.1:8799", &server.addr)
        .replace("~/.local/state/agui-translate", state.to_str().unwrap());
    let out = StdCommand::new("sh").arg("-c").arg(&cmd).output().unwrap();
    let have = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "docs/serve.md:{line}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let types = sse_types(&have);
    assert_eq!(
        types.first().map(String::as_str),
        Some("RUN_STARTED"),
        "{have}"
    );
    assert_eq!(
        types.last().map(String::as_str),
        Some("RUN_FINISHED"),
        "{have}"
    );
    assert_eq!(
        types,
        sse_types(shown),
        "docs/serve.md:{line} shows other events than come"
    );
    assert!(
        have.contains(r#""threadId":"thread-1","runId":"run-1""#),
        "{have}"
    );
}
