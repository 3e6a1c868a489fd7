//! One stub question to the witness and its answer (types only; the
//! reading is [`super::file::check`]).

use crate::base::host::Host;

/// The witness's answer for one delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// Nothing in the transcript withdraws it.
    Present,
    /// The host withdrew this very result (cut, rewound).
    Withdrawn(&'static str),
    /// Every delivery of the conversation so far ended (a clearing, a
    /// compaction, a replaced or unreadable transcript), now recorded in
    /// the journal; or, for a delivery of the main thread, every one of
    /// the main thread's (its compaction).
    EndedAll(String),
    /// The transcript cannot be read, or not all of it in the budget: no
    /// proof either way.
    Unavailable(String),
    /// The transcript does not show the asking call yet: what the host
    /// queued before it (a rewind's record) may not be on disk either.
    /// Asking again shortly may answer.
    NotYet,
    /// The stub rests on a result of another host process of the session,
    /// and the process that resumed may have loaded another one's branch
    /// of the history ([`crate::witness::lives`]).
    NotLoaded(String),
}

/// One stub question to the witness: the delivery that would back it.
#[derive(Clone, Debug)]
pub struct Question<'a> {
    pub host: Host,
    /// The delivery's conversation.
    pub conv: &'a str,
    /// Its call's tool-use id (`None`: a delivery named otherwise).
    pub call_id: Option<&'a str>,
    pub delivered_ms: u64,
    pub now: u64,
    /// The host's idle threshold ([`crate::hosts::profile::HostProfile::idle_clear_ms`]).
    pub idle_ms: Option<u64>,
    /// The asking host process (the server's parent), if known.
    pub proc: Option<u32>,
    /// The asking call's own tool-use id, when the transcript records it
    /// before the call is made (an MCP call of Claude Code's main agent):
    /// until it shows, the transcript is behind ([`crate::witness::scan::Track::caught_up`]).
    pub asking: Option<&'a str>,
    /// The delivery is a subagent's (scope `agent:<id>`): a compaction of
    /// the main thread did not reach it.
    pub subagent: bool,
    /// That subagent's scope (`agent:<id>`), on a host whose subagents
    /// write transcripts of their own (Claude Code): read on too
    /// ([`super::agent`]).
    pub agent: Option<&'a str>,
    /// The host process that received the delivery, when it is the one
    /// asking (`proc:<pid>` both): another process's compaction did not
    /// reach it. None: not known, or another process relies on it.
    pub own: Option<u32>,
    /// Results of other host processes the stub rests on, loaded with the
    /// history by a process that resumed after their confirmation: (the
    /// owner's pid, the loader's pid, unix ms of the confirmation). Each
    /// must pass [`crate::witness::lives::Lives::may_rely`].
    pub relied: Vec<(u32, u32, u64)>,
}

impl<'a> Question<'a> {
    /// A read-on with no delivery to judge (before one is recorded): only
    /// what the transcript shows is applied.
    pub fn catch_up(host: Host, conv: &'a str, now: u64) -> Question<'a> {
        Question {
            host,
            conv,
            call_id: None,
            delivered_ms: now,
            now,
            idle_ms: None,
            proc: None,
            asking: None,
            subagent: false,
            agent: None,
            own: None,
            relied: Vec::new(),
        }
    }
}
