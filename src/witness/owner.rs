//! Which Claude Code host process wrote a `compact_boundary`, pure: no
//! files, no clock.
//!
//! One session open in two processes (`--resume` while another runs)
//! writes one transcript, and no line names its process; a compaction
//! touches only the compacting process's context (docs/DELIVERY.md §8,
//! "One session, two processes"). The boundary's summary line (its child:
//! `parentUuid` is the boundary's `uuid`, `"isCompactSummary":true`)
//! carries `promptId`, which Claude Code 2.1.328 writes on a user line from
//! the writing process's own current prompt id, the one its hooks carry as
//! `prompt_id` (the transcript writer's `promptIdAtEntry`, read from the
//! process's request journal, in the JavaScript its binary embeds; fixture
//! `two-process`, lines 85–86, and the compaction hooks there). A prompt id
//! is made by the process at a prompt's or a slash command's submission, so
//! it names one process, with one known exception: a process that resumes
//! a turn left waiting for a permission may take that turn's id from the
//! history it loaded. So a prompt id counts as a process's only when the
//! first hook that named it was that process's own submission
//! (`UserPromptSubmit`, or a manual `PreCompact`: the `/compact` gets an id
//! of its own) and no other process's hook ever named it. Anything else
//! (the id unknown, first seen on another hook, named by two processes, or
//! forgotten past the bound) attributes nothing: the boundary ends the
//! main thread of every process, as before.

use crate::state::journal::Reach;
use serde::{Deserialize, Serialize};

/// Prompt ids remembered per conversation (the newest). A boundary whose
/// id was forgotten is attributed to no one.
pub const MAX_OWNERS: usize = 64;

/// One prompt id and the host process whose hooks named it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub prompt_id: String,
    pub pid: u32,
    /// The first hook naming it was the process's own submission.
    pub minted: bool,
    /// Another process's hook named it too.
    pub shared: bool,
}

/// What a hook says of a prompt id: named by process `pid`, on its own
/// submission (`minted`) or on any other hook.
pub fn note(owners: &mut Vec<Owner>, prompt_id: &str, pid: u32, minted: bool) {
    match owners.iter_mut().find(|o| o.prompt_id == prompt_id) {
        Some(o) => o.shared |= o.pid != pid,
        None => {
            if owners.len() >= MAX_OWNERS {
                owners.remove(0);
            }
            owners.push(Owner { prompt_id: prompt_id.to_string(), pid, minted, shared: false });
        }
    }
}

/// The host process a compaction summary's `promptId` proves wrote it.
pub fn owner_of(owners: &[Owner], prompt_id: Option<&str>) -> Option<u32> {
    let id = prompt_id?;
    owners.iter().find(|o| o.prompt_id == id).filter(|o| o.minted && !o.shared).map(|o| o.pid)
}

/// The main-thread boundaries one read of the transcript saw, each with its
/// `uuid` and, once its summary line is read, the process it proves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Boundaries(Vec<Seen>);

/// One boundary: its `uuid`, whether its summary was read, and the
/// process the summary proved (the first summary decides).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Seen {
    uuid: Option<String>,
    summarised: bool,
    pid: Option<u32>,
}

impl Boundaries {
    /// A main-thread boundary line.
    pub fn boundary(&mut self, uuid: Option<String>) {
        self.0.push(Seen { uuid, summarised: false, pid: None });
    }

    /// A compaction summary line: the boundary it hangs under (its parent,
    /// not attributed yet) is the process its prompt id names, if any.
    pub fn summary(&mut self, owners: &[Owner], parent: Option<&str>, prompt_id: Option<&str>) {
        let Some(parent) = parent else { return };
        if let Some(b) = self.0.iter_mut().find(|b| !b.summarised && b.uuid.as_deref() == Some(parent)) {
            b.summarised = true;
            b.pid = owner_of(owners, prompt_id);
        }
    }

    /// What the boundaries ended: one process's main thread when each was
    /// proven that process's, else every main thread; none: no boundary.
    /// A boundary whose summary was not in the same read proves nothing.
    pub fn reach(&self) -> Option<Reach<'static>> {
        self.0.iter().map(|b| b.pid.map_or(Reach::Main, Reach::MainOf)).reduce(widen)
    }
}

/// The reach of two ends together: the wider one (two processes' main
/// threads: every main thread).
pub fn widen(a: Reach<'static>, b: Reach<'static>) -> Reach<'static> {
    match (a, b) {
        (Reach::MainOf(p), Reach::MainOf(q)) if p == q => a,
        (Reach::MainOf(_) | Reach::Main, Reach::MainOf(_) | Reach::Main) => Reach::Main,
        _ => Reach::All,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_id_names_a_process_only_when_it_made_it_and_no_other_named_it() {
        // (hooks as (prompt id, pid, minted), the summary's id, the process proven)
        type Row = (&'static str, Vec<(&'static str, u32, bool)>, Option<&'static str>, Option<u32>);
        #[rustfmt::skip]
        let rows: Vec<Row> = vec![
            ("its prompt's hook",                   vec![("x", 2, true)], Some("x"), Some(2)),
            ("its prompt, then its compaction",     vec![("x", 2, true), ("x", 2, false)], Some("x"), Some(2)),
            ("first named by another hook of it",   vec![("x", 2, false), ("x", 2, true)], Some("x"), None),
            ("named by two processes",              vec![("x", 1, true), ("x", 2, false)], Some("x"), None),
            ("... the other way round",             vec![("x", 2, true), ("x", 1, true)], Some("x"), None),
            ("another prompt of it",                vec![("y", 2, true)], Some("x"), None),
            ("no prompt id on the summary",         vec![("x", 2, true)], None, None),
            ("two processes, each its own",         vec![("x", 1, true), ("y", 2, true)], Some("y"), Some(2)),
        ];
        for (name, hooks, id, want) in rows {
            let mut o = Vec::new();
            for (p, pid, minted) in hooks {
                note(&mut o, p, pid, minted);
            }
            assert_eq!(owner_of(&o, id), want, "{name}");
        }
        let mut o = Vec::new();
        note(&mut o, "old", 2, true);
        for i in 0..MAX_OWNERS {
            note(&mut o, &format!("p{i}"), 1, true);
        }
        assert_eq!((o.len(), owner_of(&o, Some("old"))), (MAX_OWNERS, None), "forgotten past the bound");
    }

    #[test]
    fn boundaries_end_one_process_only_when_each_is_proven_its() {
        let owners = {
            let mut o = Vec::new();
            note(&mut o, "x1", 1, true);
            note(&mut o, "x2", 2, true);
            o
        };
        // (boundary uuids, summaries as (parent, prompt id), reach)
        type Row = (
            &'static str,
            Vec<Option<&'static str>>,
            Vec<(Option<&'static str>, Option<&'static str>)>,
            Option<Reach<'static>>,
        );
        #[rustfmt::skip]
        let rows: Vec<Row> = vec![
            ("none",                              vec![], vec![], None),
            ("a boundary and its summary",        vec![Some("b")], vec![(Some("b"), Some("x2"))], Some(Reach::MainOf(2))),
            ("no summary (in the next read)",     vec![Some("b")], vec![], Some(Reach::Main)),
            ("a summary under another line",      vec![Some("b")], vec![(Some("c"), Some("x2"))], Some(Reach::Main)),
            ("a summary with no parent",          vec![Some("b")], vec![(None, Some("x2"))], Some(Reach::Main)),
            ("a boundary with no uuid",           vec![None], vec![(None, Some("x2"))], Some(Reach::Main)),
            ("an id no process owns",             vec![Some("b")], vec![(Some("b"), Some("x9"))], Some(Reach::Main)),
            ("two of one process",                vec![Some("b"), Some("c")], vec![(Some("b"), Some("x2")), (Some("c"), Some("x2"))], Some(Reach::MainOf(2))),
            ("one of each process",               vec![Some("b"), Some("c")], vec![(Some("b"), Some("x2")), (Some("c"), Some("x1"))], Some(Reach::Main)),
            ("one proven, one not",               vec![Some("b"), Some("c")], vec![(Some("b"), Some("x2"))], Some(Reach::Main)),
            ("a second summary under one boundary", vec![Some("b")], vec![(Some("b"), Some("x9")), (Some("b"), Some("x2"))], Some(Reach::Main)),
        ];
        for (name, bs, sums, want) in rows {
            let mut b = Boundaries::default();
            for u in bs {
                b.boundary(u.map(str::to_string));
            }
            for (parent, id) in sums {
                b.summary(&owners, parent, id);
            }
            assert_eq!(b.reach(), want, "{name}");
        }
    }

    #[test]
    fn widening() {
        use Reach::*;
        #[rustfmt::skip]
        let rows: [(Reach<'static>, Reach<'static>, Reach<'static>); 7] = [
            (MainOf(1), MainOf(1), MainOf(1)),
            (MainOf(1), MainOf(2), Main),
            (MainOf(1), Main,      Main),
            (Main,      MainOf(1), Main),
            (Main,      Main,      Main),
            (All,       MainOf(1), All),
            (MainOf(1), All,       All),
        ];
        for (a, b, want) in rows {
            assert_eq!(widen(a, b), want, "{a:?} {b:?}");
        }
    }
}
