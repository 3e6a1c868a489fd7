//! What one host's hooks are doing, in one word, from the facts `hooks
//! status` gathers: the pure rule behind the first lines of `leanctx
//! status`. A fresh install that has not fired yet is waiting (a note, exit
//! 0); one that has stayed silent for [`WAIT_MS`] is a problem (issue 25:
//! `status` failed right after every clean install).

use serde::Serialize;

/// How long after an install a host may stay silent before that is a
/// problem: a day, so a host the user does not open every hour is not
/// blamed, and one whose hooks never run (untrusted Codex hooks, an
/// untrusted folder) is named the next day at the latest.
pub const WAIT_MS: u64 = 24 * 60 * 60 * 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostState {
    /// Installed, and an event was seen.
    Working,
    /// Installed less than [`WAIT_MS`] ago, no event yet (a note).
    Waiting,
    /// Installed [`WAIT_MS`] or more ago (or at a time unknown), no event
    /// ever (a problem).
    NeverFired,
    /// Codex's `[features] hooks = false` (a problem of its own).
    Off,
    /// Installed; whether it fired cannot be told (the data dir is unusable).
    Unknown,
    /// Not installed, but events were seen: the hooks were removed.
    Removed,
    /// Not installed, never seen.
    NotInstalled,
}

/// The facts about one host.
#[derive(Clone, Copy, Debug, Default)]
pub struct Facts {
    pub installed: bool,
    /// When the config holding our entries last changed (unix ms).
    pub installed_ms: Option<u64>,
    pub last_event_ms: Option<u64>,
    /// Codex hooks switched off.
    pub off: bool,
    /// Hooks can record (else a silence proves nothing).
    pub recording: bool,
}

pub fn state(f: Facts, now_ms: u64) -> HostState {
    match (f.installed, f.last_event_ms) {
        (false, Some(_)) => HostState::Removed,
        (false, None) => HostState::NotInstalled,
        (true, _) if f.off => HostState::Off,
        (true, Some(_)) => HostState::Working,
        (true, None) if !f.recording => HostState::Unknown,
        (true, None) => match f.installed_ms {
            Some(t) if now_ms.saturating_sub(t) < WAIT_MS => HostState::Waiting,
            _ => HostState::NeverFired,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use HostState as S;

    #[test]
    fn a_fresh_install_waits_a_silent_one_is_a_problem() {
        let now = 10 * WAIT_MS;
        let inst =
            |ago: u64| Facts { installed: true, installed_ms: Some(now - ago), recording: true, ..Facts::default() };
        let table = [
            (inst(0), S::Waiting),
            (inst(WAIT_MS - 1), S::Waiting),
            (inst(WAIT_MS), S::NeverFired),
            (Facts { installed_ms: None, ..inst(0) }, S::NeverFired),
            // A config changed "in the future" (a skewed clock): waiting.
            (Facts { installed_ms: Some(now + 5), ..inst(0) }, S::Waiting),
            (Facts { last_event_ms: Some(1), ..inst(WAIT_MS * 3) }, S::Working),
            (Facts { recording: false, ..inst(WAIT_MS * 3) }, S::Unknown),
            (Facts { off: true, ..inst(WAIT_MS * 3) }, S::Off),
            (Facts { off: true, last_event_ms: Some(1), ..inst(0) }, S::Off),
            (Facts { last_event_ms: Some(1), ..Facts::default() }, S::Removed),
            (Facts::default(), S::NotInstalled),
        ];
        for (f, want) in table {
            assert_eq!(state(f, now), want, "{f:?}");
        }
    }
}
