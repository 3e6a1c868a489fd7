//! The idle return of one host process of a Claude Code session open in
//! several (`--resume` while another runs), provisional for that process:
//! pure, no files, no clock.
//!
//! The host makes its idle cut and its clearing edit from the returning
//! process's own messages and sends them in that process's requests
//! (docs/DELIVERY.md §8, "The idle return of one process"), so such a
//! return concerns that process's contexts only. Both processes write one
//! transcript, and no answer line names its process, so the return's first
//! answer cannot be told from the other's as it is when the process is
//! alone ([`super::scan::Pending`]). What can be told: the returning prompt's
//! own line carries the prompt id the process's `UserPromptSubmit` named
//! (`promptId`, fixture `idle-cut-interactive` line 272 and hook 105), and
//! the process writes its lines through one queue, in order (§8, "A
//! rewind's record is written late too"). So once a call of that process,
//! asked about by that process, shows in the transcript after that prompt
//! line, every line the process queued between the two is on disk too: its
//! cut record and its first answer among them. The return is then settled
//! by everything read from the prompt line on, whoever wrote it (the other
//! process's lines can only make it end more): a cut record withdraws its
//! exact ids (for every process: a record does not say whose it is); an
//! answer naming a clearing edit, or counting cut results with no cut
//! record read, ends every earlier delivery of the process; else nothing
//! more was withdrawn.

use super::scan::Fact;
use serde::{Deserialize, Serialize};

/// Returns kept per conversation (one per process at most); a return past
/// it ends its process's deliveries at once.
pub const MAX_RETURNS: usize = 16;

/// One process's idle return, not settled yet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Return {
    /// The host process that returned (`CLAUDE_PID`).
    pub pid: u32,
    /// The prompt id its prompt hook named, made by its own submission.
    pub prompt_id: String,
    /// The transcript's length when the hook ran: its prompt line is after.
    pub from: u64,
    /// Unix ms of the returning prompt: the process's deliveries before it
    /// are in doubt.
    pub at_ms: u64,
    /// Where its prompt line starts, once read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_at: Option<u64>,
    /// From that line on: a cut record was read.
    #[serde(default)]
    pub cut_seen: bool,
    /// From that line on: an answer counted cut results in force.
    #[serde(default)]
    pub cut_counted: bool,
    /// From that line on: an answer named a clearing edit sent to the API.
    #[serde(default)]
    pub edit: bool,
}

/// How a return was settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// Nothing of the process's withdrawn beyond the cut records' ids.
    Kept,
    /// Every earlier delivery of the process ends (which ones the API or
    /// the cut took, the transcript does not say).
    Ended,
}

impl Return {
    /// Apply what the line at `at` says (`prompt_id`: its `promptId`, read
    /// for a prompt line only).
    pub fn saw(&mut self, fact: &Fact, prompt_id: Option<&str>, at: u64) {
        if self.prompt_at.is_none() {
            if at >= self.from && matches!(fact, Fact::Prompt(_)) && prompt_id == Some(self.prompt_id.as_str()) {
                self.prompt_at = Some(at);
            }
            return;
        }
        match fact {
            Fact::Cut(_) => self.cut_seen = true,
            Fact::Answer { cut, edit, .. } => {
                self.cut_counted |= *cut > 0;
                self.edit |= *edit;
            }
            _ => {}
        }
    }

    /// Settled by the line of a call of this process at `call_at` (none:
    /// not read yet)? Only a line after the prompt line settles it.
    pub fn settle(&self, call_at: Option<u64>) -> Option<Settled> {
        let (p, c) = (self.prompt_at?, call_at?);
        (c > p).then_some(if self.edit || (self.cut_counted && !self.cut_seen) {
            Settled::Ended
        } else {
            Settled::Kept
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(cut: u64, edit: bool) -> Fact {
        Fact::Answer { tool_uses: vec![], cut, edit }
    }

    #[test]
    fn a_return_is_settled_by_its_processs_call_after_its_prompt_line() {
        let prompt = || Fact::Prompt("u".into());
        let cut = || Fact::Cut(vec!["t1".into()]);
        // (what, lines as (fact, its prompt id, offset), the call's offset, the settling)
        type Row = (&'static str, Vec<(Fact, Option<&'static str>, u64)>, Option<u64>, Option<Settled>);
        #[rustfmt::skip]
        let rows: Vec<Row> = vec![
            ("its prompt, its cut, the answer counting it", vec![(prompt(), Some("p"), 100), (cut(), None, 200), (answer(3, false), None, 300)], Some(400), Some(Settled::Kept)),
            ("the call is the first answer itself", vec![(prompt(), Some("p"), 100), (answer(0, false), None, 300)], Some(300), Some(Settled::Kept)),
            ("nothing cut, no edit", vec![(prompt(), Some("p"), 100), (answer(0, false), None, 300)], Some(400), Some(Settled::Kept)),
            ("a clearing edit sent", vec![(prompt(), Some("p"), 100), (answer(0, true), None, 300)], Some(400), Some(Settled::Ended)),
            ("cut results counted, no record", vec![(prompt(), Some("p"), 100), (answer(2, false), None, 300)], Some(400), Some(Settled::Ended)),
            // The other process's answer after the prompt line: counted too.
            ("another's answer with an edit", vec![(prompt(), Some("p"), 100), (answer(0, true), None, 150), (answer(0, false), None, 300)], Some(400), Some(Settled::Ended)),
            ("the prompt line not read yet", vec![(answer(0, false), None, 300)], Some(400), None),
            ("the call not read yet", vec![(prompt(), Some("p"), 100)], None, None),
            ("the call before the prompt line (an earlier turn's)", vec![(prompt(), Some("p"), 100)], Some(50), None),
            ("another process's prompt", vec![(prompt(), Some("q"), 100), (answer(0, false), None, 300)], Some(400), None),
            ("a prompt without an id", vec![(prompt(), None, 100)], Some(400), None),
            ("a prompt line before the hook's length", vec![(prompt(), Some("p"), 5)], Some(400), None),
            // Lines before the prompt line are an earlier turn's.
            ("an edit before the prompt line", vec![(answer(0, true), None, 50), (prompt(), Some("p"), 100)], Some(400), Some(Settled::Kept)),
            ("a cut before the prompt line, counted after", vec![(cut(), None, 50), (prompt(), Some("p"), 100), (answer(1, false), None, 300)], Some(400), Some(Settled::Ended)),
        ];
        for (what, lines, call, want) in rows {
            let mut r = Return { pid: 7, prompt_id: "p".into(), from: 10, at_ms: 1, ..Return::default() };
            for (f, id, at) in lines {
                r.saw(&f, id, at);
            }
            assert_eq!(r.settle(call), want, "{what}");
        }
    }
}
