//! The `earthverse` command-line tool: wires the library crates together.

mod commands;

/// mimalloc as the allocator: scoring a release allocates many small
/// strings, maps and vectors on every core, and glibc's allocator took
/// about a fifth of `earthverse score`'s CPU (perf, issue #30 item 3).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Run, score and study scientific agents on the EarthVerse benchmark.
#[derive(Debug, Parser)]
#[command(name = "earthverse", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a release against the machine-checkable release gates (App. C.7).
    Validate(commands::validate::Args),
    /// Count answer units, or score recorded runs unit by unit (§4.1).
    Units(commands::units::Args),
    /// List, call or replay research tools and domain operations (§3.4).
    #[command(subcommand)]
    Tools(commands::tools::ToolsCommand),
    /// Run an agent over the tasks of a release (App. C.2, E).
    Run(commands::run::Args),
    /// The scientific environments of Table 7: installed or not, and their
    /// coverage of a release (App. A.4, D.6).
    #[command(subcommand)]
    Environments(commands::environments::EnvironmentsCommand),
    /// Check shard output directories against their batch plan, and merge them.
    Merge(commands::merge::Args),
    /// Claim–evidence ledger of recorded runs: provenance and error families (App. B.3).
    Evidence(commands::evidence::Args),
    /// Score runs with a judge into evaluation records (§4.1).
    Score(commands::score::ScoreArgs),
    /// Aggregate evaluation records into a leaderboard (Table 2).
    Leaderboard(commands::leaderboard::LeaderboardArgs),
    /// Paired bootstrap comparison of two conditions (App. C.5).
    Compare(commands::compare::CompareArgs),
    /// Write a self-contained HTML report.
    Report(commands::report::ReportArgs),
    /// Answer-free oracles of the tasks, leak-checked (App. A.3.1, Table 4).
    Oracle(commands::oracle::Args),
    /// Write a perturbed copy of a release (App. A.3.3, Table 4c).
    Perturb(commands::perturb::Args),
    /// Run a controlled study from a manifest, and report it (App. A; Tables 3, 4, 6).
    #[command(subcommand)]
    Study(commands::study::StudyCommand),
    /// Expert review page on 127.0.0.1 over a stratified sample of runs,
    /// and agreement of the labels with every judge (§7).
    Review(commands::review::Args),
}

/// Turns transparent huge pages off for this process. mimalloc asks for
/// them on its arenas, and the kernel then zeroes a whole 2 MiB page on
/// the first touch of each: with the many short-lived allocations of
/// scoring every run of a release, that zeroing was 12 % of `earthverse
/// score`'s CPU (perf, issue #30 item 3) and its system time fell from
/// 0.5–1.0 s to 0.25 s without them. Only the scoring commands call it;
/// a failure (an old kernel) changes nothing but the speed.
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_THP_DISABLE takes plain integer arguments and
        // only sets a flag of this process.
        let rc = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
        if rc != 0 {
            tracing::debug!(
                error = %std::io::Error::last_os_error(),
                "PR_SET_THP_DISABLE refused; huge pages stay on"
            );
        }
    }
}

fn main() -> ExitCode {
    // First, before any thread: inside the python_exec sandbox this binary
    // is re-executed as the sandbox helper (one binary, no second target).
    earthverse_tool_registry::sandbox::run_helper_if_invoked();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("EARTHVERSE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colour only on a terminal: cluster job logs are files.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Score(_) | Command::Units(_) | Command::Evidence(_)
    ) {
        no_transparent_huge_pages();
    }
    if prints_only(&cli.command) {
        quiet_on_closed_stdout();
    }
    let result = match cli.command {
        Command::Validate(args) => commands::validate::run(args),
        Command::Units(args) => commands::units::run(args),
        Command::Tools(cmd) => commands::tools::run(cmd),
        Command::Run(args) => commands::run::run(args),
        Command::Environments(cmd) => commands::environments::run(cmd),
        Command::Evidence(args) => commands::evidence::run(args),
        Command::Merge(args) => commands::merge::run(args),
        Command::Score(args) => commands::score::run_score(args),
        Command::Leaderboard(args) => commands::leaderboard::run_leaderboard(args),
        Command::Compare(args) => commands::compare::run_compare(args),
        Command::Report(args) => commands::report::run_report(args),
        Command::Study(cmd) => commands::study::run(cmd),
        Command::Oracle(args) => commands::oracle::run(args),
        Command::Perturb(args) => commands::perturb::run(args),
        Command::Review(args) => commands::review::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", error_text(&err));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes joined by ": " (as `{:#}`), leaving out a
/// cause whose text the message before it already ends with: library
/// errors such as `"{path}: {source}"` show their source and also return
/// it from `source()`, which printed "Permission denied (os error 13)"
/// twice.
fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let part = cause.to_string();
        if !text.is_empty() && text.ends_with(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

/// Commands that only read files and print (no child processes, no
/// sockets): they may end like other Unix filters when their reader goes
/// away (`earthverse units ... | head`).
fn prints_only(command: &Command) -> bool {
    matches!(
        command,
        Command::Validate(_)
            | Command::Units(_)
            | Command::Evidence(_)
            | Command::Leaderboard(_)
            | Command::Compare(_)
            | Command::Report(_)
    )
}

/// Restores the default action of SIGPIPE, which the Rust runtime ignores,
/// so that writing to a closed pipe ends the process quietly instead of
/// panicking in `println!`. Only for [`prints_only`] commands: the others
/// write to child processes and sockets, where a closed peer must be an
/// error to handle, not a signal that ends the run.
fn quiet_on_closed_stdout() {
    #[cfg(unix)]
    // SAFETY: called once from `main` before any thread is started;
    // `signal` with `SIG_DFL` only changes this process's disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
