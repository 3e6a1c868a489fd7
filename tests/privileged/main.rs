//! The tests that need root (a tmpfs mount, files of another uid), with a
//! harness of their own (`harness = false` in Cargo.toml): each case names
//! what it needs, the harness checks it for real before running it (a
//! tmpfs mounted and unmounted; a file chowned to another uid), and a case
//! that cannot run is reported **ignored, with the reason**, in libtest's
//! own format, so `cargo test` counts it as ignored and says why without
//! `--nocapture` (libtest's `#[ignore = "…"]` is decided at compile time,
//! and a `cfg` set by a build script would be decided on the machine and
//! user that built the tests, not the ones running them). CI runs as root
//! and sets `LEANCTX_REQUIRE_ROOT=1` and `LEANCTX_REQUIRE_MOUNTS=1`
//! (.ci/run): there a case that cannot run fails instead.
//!
//! Understood arguments: name filters (substring, or `--exact`), `--skip
//! FILTER`, `--list`, `--ignored` / `--include-ignored` (run the cases
//! whose need is not met anyway: they then fail), and libtest's others are
//! accepted and ignored. Cases run one at a time (mounts).

#![allow(dead_code)]

#[path = "../it/support.rs"]
mod support;

// The fault helpers these cases share with tests/it (its own tests are
// compiled out here: this target is not built with `--test`).
#[cfg(unix)]
#[allow(unused)]
#[path = "../it/faults.rs"]
mod faults;

#[cfg(unix)]
#[allow(unused)]
#[path = "../it/files.rs"]
mod files;

#[cfg(unix)]
#[allow(unused)]
#[path = "../it/secret.rs"]
mod secret;

#[cfg(unix)]
mod cases;

use std::process::ExitCode;
use std::time::Instant;

/// What a case needs, checked before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    /// Mounting a tmpfs (root with CAP_SYS_ADMIN, a kernel that lets it).
    Mounts,
    /// Giving a file to another uid (root, CAP_CHOWN).
    Chown,
}

impl Need {
    /// The variable that turns "cannot run here" into a failure.
    fn required_by(self) -> &'static str {
        match self {
            Need::Mounts => "LEANCTX_REQUIRE_MOUNTS",
            Need::Chown => "LEANCTX_REQUIRE_ROOT",
        }
    }

    /// `Err(why)`: the need is not met here.
    #[cfg(unix)]
    fn check(self) -> Result<(), String> {
        let t = tempfile::tempdir().map_err(|e| e.to_string())?;
        let uid = leanctx::fsx::current_uid();
        match self {
            Need::Chown => {
                let f = t.path().join("probe");
                std::fs::write(&f, "").map_err(|e| e.to_string())?;
                std::os::unix::fs::chown(&f, Some(4242), Some(4242))
                    .map_err(|e| format!("needs root to give a file to another user (uid {uid}: {e})"))
            }
            Need::Mounts => {
                let o = std::process::Command::new("mount")
                    .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
                    .arg(t.path())
                    .output()
                    .map_err(|e| format!("needs mount(8): {e}"))?;
                if !o.status.success() {
                    // One line: libtest's "ignored, <reason>" is a line.
                    let err = String::from_utf8_lossy(&o.stderr);
                    let first = err.lines().next().unwrap_or("").trim();
                    return Err(format!("needs root to mount a tmpfs (uid {uid}: {first})"));
                }
                let _ = std::process::Command::new("umount").arg(t.path()).status();
                Ok(())
            }
        }
    }

    #[cfg(not(unix))]
    fn check(self) -> Result<(), String> {
        Err("Unix only (mounts, owners)".into())
    }

    fn required(self) -> bool {
        std::env::var(self.required_by()).is_ok_and(|v| v == "1")
    }
}

struct Case {
    name: &'static str,
    needs: Need,
    run: fn(),
}

#[cfg(unix)]
const CASES: &[Case] = &[
    Case { name: "faults::read_only_data_dir", needs: Need::Mounts, run: cases::read_only_data_dir },
    Case {
        name: "faults::full_data_dir_at_several_fill_levels",
        needs: Need::Mounts,
        run: cases::full_data_dir_at_several_fill_levels,
    },
    Case {
        name: "faults::another_users_data_dir_is_refused",
        needs: Need::Chown,
        run: cases::another_users_data_dir_is_refused,
    },
    Case {
        name: "faults::a_journal_of_another_user_withholds",
        needs: Need::Chown,
        run: cases::a_journal_of_another_user_withholds,
    },
    Case {
        name: "files::another_users_file_anywhere_leanctx_reads_answers_in_bounded_time",
        needs: Need::Chown,
        run: || crate::files::every_command_answers(crate::files::Kind::OtherOwner),
    },
    Case {
        name: "secret::a_secret_of_another_user_withholds_every_stub",
        needs: Need::Chown,
        run: || {
            crate::secret::untrusted_secret_withholds("another user's", |p| {
                std::os::unix::fs::chown(p, Some(4242), Some(4242)).unwrap()
            })
        },
    },
    Case {
        name: "install::the_files_owner_is_kept_when_root_edits_it",
        needs: Need::Chown,
        run: cases::the_files_owner_is_kept_when_root_edits_it,
    },
    Case {
        name: "serverinstall::the_server_files_owner_is_kept_when_root_edits_it",
        needs: Need::Chown,
        run: cases::the_server_files_owner_is_kept_when_root_edits_it,
    },
];

#[cfg(not(unix))]
const CASES: &[Case] = &[];

/// The command line, as libtest reads the parts that matter here.
#[derive(Default)]
struct Args {
    filters: Vec<String>,
    skip: Vec<String>,
    exact: bool,
    list: bool,
    run_ignored: bool,
}

fn args() -> Args {
    let mut a = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--exact" => a.exact = true,
            "--list" => a.list = true,
            "--ignored" | "--include-ignored" => a.run_ignored = true,
            "--skip" => a.skip.extend(it.next()),
            // libtest options with a value this harness does not use.
            "--test-threads" | "--format" | "--color" | "--logfile" | "-Z" | "--report-time" => {
                it.next();
            }
            s if s.starts_with('-') => {}
            s => a.filters.push(s.to_string()),
        }
    }
    a
}

impl Args {
    fn selects(&self, name: &str) -> bool {
        let hit = |f: &String| if self.exact { name == f } else { name.contains(f.as_str()) };
        (self.filters.is_empty() || self.filters.iter().any(hit))
            && !self.skip.iter().any(|s| name.contains(s.as_str()))
    }
}

fn main() -> ExitCode {
    let a = args();
    let chosen: Vec<&Case> = CASES.iter().filter(|c| a.selects(c.name)).collect();
    if a.list {
        for c in &chosen {
            println!("{}: test", c.name);
        }
        return ExitCode::SUCCESS;
    }
    let filtered = CASES.len() - chosen.len();
    let started = Instant::now();
    println!("\nrunning {} test{}", chosen.len(), if chosen.len() == 1 { "" } else { "s" });
    let (mut passed, mut ignored, mut failed) = (0, 0, Vec::new());
    for c in chosen {
        if let Err(why) = c.needs.check() {
            if c.needs.required() {
                println!("test {} ... FAILED", c.name);
                failed.push(format!("{}: {}=1, but it cannot run here: {why}", c.name, c.needs.required_by()));
                continue;
            }
            if !a.run_ignored {
                println!("test {} ... ignored, {why}", c.name);
                ignored += 1;
                continue;
            }
        }
        match std::panic::catch_unwind(c.run) {
            Ok(()) => {
                println!("test {} ... ok", c.name);
                passed += 1;
            }
            Err(_) => {
                println!("test {} ... FAILED", c.name);
                failed.push(format!("{}: panicked (message above)", c.name));
            }
        }
    }
    if !failed.is_empty() {
        println!("\nfailures:\n    {}", failed.join("\n    "));
    }
    let verdict = if failed.is_empty() { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {passed} passed; {} failed; {ignored} ignored; 0 measured; {filtered} filtered out; \
         finished in {:.2}s\n",
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(101) }
}
