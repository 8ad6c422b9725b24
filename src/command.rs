//! The commands: what each subcommand of the command line does, put
//! together from the layers below (the filter loop in [`crate::run`] and
//! [`crate::jobs`], `run` in [`crate::process::spawn`], `serve` in [`crate::serve`],
//! the validator in [`crate::check`]). This is the one module that turns the
//! command line ([`crate::cli`]) into what those take.

use std::io::{self, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;

use crate::cli::{Args, CheckArgs, Command, FilterArgs, RunArgs, ServeArgs};
use crate::dialect::request::RunRequest;
use crate::{jobs, run};

/// Run the command the arguments name.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    // The stop signals were held while the command line was read: `serve`
    // lets them come once its handler is in place, the others at once (a
    // stop signal then acts as it always did).
    if !matches!(args.command, Some(Command::Serve(_))) {
        crate::base::interrupt::release();
    }
    match args.command {
        Some(Command::Run(run)) => run_cli(*run),
        Some(Command::Check(c)) => check(c),
        Some(Command::Serve(s)) => serve(*s),
        None => translate(args.filter),
    }
}

/// `agui-translate run`.
fn run_cli(a: RunArgs) -> anyhow::Result<ExitCode> {
    if a.check {
        return crate::process::spawn::check();
    }
    // A live run's ids are fresh: two runs whose first records are alike
    // (or that fail before any record) must not share them.
    let mut output = a.output;
    output.run_id.get_or_insert_with(crate::base::uuid::v7);
    let em = output.emitter();
    let run = crate::process::spawn::Run {
        cli: a.cli.expect("clap requires the CLI unless --check"),
        prompt: a.prompt,
        request: RunRequest {
            model: a.model,
            effort: a.effort,
            max_turns: a.max_turns,
            cwd: a.cwd,
            resume: a.resume,
            allow_tool: a.allow_tool,
            deny_tool: a.deny_tool,
            approval: a.approval,
            page_tools: a.page_tools.is_some() || a.state_file.is_some(),
            attachments: a.attach,
            extra: a.extra,
        },
        cli_path: a.cli_path,
        transport: a.transport,
        timeout: a.timeout,
        session_file: a.session_file,
        plan_file: a.plan_file,
        thread_id: output.thread_id.clone(),
        approval_timeout: a.approval_timeout,
        start_timeout: a.start_timeout,
        input_marker: a.input_marker,
        keep_turns: a.keep_turns,
        page_tools: a.page_tools,
        state_file: a.state_file,
        tool_timeout: a.tool_timeout,
    };
    crate::process::spawn::main(run, em)
}

/// `agui-translate serve`; the options for its runs are checked by this
/// program's command line.
fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let config = crate::serve::Config {
        cli: a.cli,
        listen: a.listen,
        token: a.token,
        token_file: a.token_file,
        no_token: a.no_token,
        allow_origin: a.allow_origin,
        allow_host: a.allow_host,
        run_options: a.run_options,
        agui_version: a.agui_version,
        state_dir: a.state_dir,
        raw: a.raw,
        max_attachment: a.max_attachment,
        allow_fetch: a.allow_fetch,
        rejoin_grace: a.rejoin_grace,
        keep_idle: a.keep_idle,
    };
    crate::serve::main(config, |argv| crate::cli::parse_from(argv).map(drop))
}

/// `agui-translate check`.
fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let files = if args.files.is_empty() {
        vec![Path::new("-").to_path_buf()]
    } else {
        args.files
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut failed = false;
    for path in &files {
        let (name, rdr) =
            run::open_input(path).with_context(|| format!("cannot open {}", path.display()))?;
        let mut rdr = io::BufReader::with_capacity(64 * 1024, rdr);
        let looks = first_line_dialect(&mut rdr);
        match crate::check::check(rdr).with_context(|| format!("reading {name}"))? {
            Ok(s) => writeln!(out, "{name}: OK, {s}")?,
            Err(violations) => {
                failed = true;
                for v in &violations {
                    let at = if v.line == 0 {
                        "end".to_owned()
                    } else {
                        v.line.to_string()
                    };
                    let _ = writeln!(io::stderr(), "agui-translate: {name}:{at}: {}", v.message);
                }
                if let Some(d) = looks {
                    let file = if path.as_os_str() == "-" {
                        "FILE"
                    } else {
                        &name
                    };
                    let _ = writeln!(
                        io::stderr(),
                        "agui-translate: {name}: this is {}'s own stream, not AG-UI events: translate it first: agui-translate --from {} {file} | agui-translate check",
                        d.title,
                        d.name()
                    );
                }
                let n = violations.len();
                let s = if n == 1 { "" } else { "s" };
                writeln!(out, "{name}: INVALID, {n} problem{s}")?;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The CLI whose record the first line of `rdr` is, if it is one (read
/// ahead, not consumed): `check` given a CLI's log rather than its
/// translation says so.
fn first_line_dialect(rdr: &mut impl io::BufRead) -> Option<crate::dialect::Dialect> {
    let buf = rdr.fill_buf().ok()?;
    let line = memchr::memchr(b'\n', buf).map_or(buf, |i| &buf[..i]);
    crate::dialect::classify(line)
}

/// `agui-translate [FILE]…`: the filter.
fn translate(args: FilterArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    // Fail on an unsupported dialect before reading anything.
    crate::dialect::for_input(args.from)?;
    crate::base::interrupt::install().context("installing the signal handlers")?;
    let files = if args.files.is_empty() {
        vec![Path::new("-").to_path_buf()]
    } else {
        args.files.clone()
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    run::widen_pipe(out.as_fd());
    let mut total = jobs::Total::default();
    jobs::translate_all(&args, &files, &mut out, &mut total)?;
    if let Some(format) = args.stats {
        let report = total.stats.report_counts(
            &total.counts,
            total.bytes_out,
            started.elapsed().as_secs_f64(),
            format,
        );
        let _ = io::stderr().write_all(report.as_bytes());
    }
    Ok(if let Some(sig) = total.interrupted {
        ExitCode::from(128 + sig as u8)
    } else if total.unreadable {
        ExitCode::from(2)
    } else if total.empty && (args.strict || args.from.dialect().is_some()) {
        // A CLI that died before writing anything: not a pass in CI.
        ExitCode::from(3)
    } else if total.stats.bad > 0 || total.mismatched {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
