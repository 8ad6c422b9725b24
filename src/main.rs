//! agui-translate: coding-agent CLI streams in, AG-UI 1.0 events out.

use std::io::{self, Write};
use std::process::ExitCode;

use agui_translate::{cli, command};

fn main() -> ExitCode {
    // Until a command has its handlers in place, a stop signal waits
    // rather than ending the process half-started (`command::main`).
    agui_translate::base::interrupt::hold();
    match command::main(cli::parse()) {
        Ok(code) => code,
        // `| head`: the reader went away; that is not our failure.
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = writeln!(io::stderr(), "agui-translate: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
