//! What the gate says about a call, and the actions a rule can take.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Allow,
    Ask,
    Deny,
}

/// What the gate says about one call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    NoOpinion,
    Decide {
        action: Action,
        message: String,
        /// Which file and rule decided (`path#n`, rules numbered from 1), or the broken file.
        decided_by: String,
        /// A policy file that does not parse decided (asks until fixed).
        #[serde(skip)]
        broken: bool,
    },
}
