//! The one error type of the core. Bad bytes inside pages are never errors: they become findings.
//! Errors are for things that stop an operation as a whole (a file that cannot be read, a pg_control
//! whose layout is unknown, arguments that cannot work).

use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum CoreError {
    /// An operating-system error on `path`.
    Io { path: PathBuf, source: std::io::Error },
    /// A file that must be parsed as a whole (pg_control, a manifest) is not in a form we know.
    Format { what: &'static str, detail: String },
    /// The caller asked for something that cannot be done (block beyond the end, wrong page size …).
    Invalid(String),
}

impl CoreError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        CoreError::Io { path: path.into(), source }
    }
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoreError::Io { path, source } => write!(f, "{}: {}", path.display(), source),
            CoreError::Format { what, detail } => write!(f, "{what}: {detail}"),
            CoreError::Invalid(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for CoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CoreError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, CoreError>;
