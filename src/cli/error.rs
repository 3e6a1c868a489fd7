//! Why a command failed (exit 2): the message for the user, and the error
//! that caused it when there was one.

use std::error::Error;
use std::fmt;

#[derive(Debug)]
pub(crate) struct CliError {
    message: String,
    cause: Option<Box<dyn Error + Send + Sync>>,
}

impl CliError {
    /// `message`, caused by `cause` (which the message already states).
    pub(crate) fn caused(message: String, cause: impl Error + Send + Sync + 'static) -> CliError {
        CliError { message, cause: Some(Box::new(cause)) }
    }
}

impl CliError {
    /// Writing the command's own output failed (nothing more can be said
    /// on stdout).
    pub(crate) fn is_output(&self) -> bool {
        self.message.starts_with("cannot write output")
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for CliError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.cause.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

impl From<String> for CliError {
    fn from(message: String) -> CliError {
        CliError { message, cause: None }
    }
}

impl From<&str> for CliError {
    fn from(message: &str) -> CliError {
        message.to_string().into()
    }
}

impl From<crate::state::ledger::InputError> for CliError {
    fn from(e: crate::state::ledger::InputError) -> CliError {
        CliError::caused(e.to_string(), e)
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> CliError {
        CliError::caused(e.to_string(), e)
    }
}
