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
            CoreError::Io { path, source } => write!(f, "{}: {}", path.display(), io_reason(source)),
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

/// An I/O error's reason as PostgreSQL's tools print it (`could not open file "…": No such file or directory` keeps
/// strerror's text, and our messages are lowercase): Rust's `Display` appends ` (os error 2)`, which names nothing a
/// DBA can act on.
pub fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    let reason = match e.raw_os_error() {
        Some(code) => text.strip_suffix(&format!(" (os error {code})")).unwrap_or(&text).to_string(),
        None => text,
    };
    let mut chars = reason.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => reason,
    }
}

pub type Result<T> = std::result::Result<T, CoreError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_read_as_our_messages() {
        let e = CoreError::io("/x/base", std::io::Error::from_raw_os_error(20));
        assert_eq!(e.to_string(), "/x/base: not a directory");
        let custom = std::io::Error::new(std::io::ErrorKind::InvalidData, "Truncated member");
        assert_eq!(io_reason(&custom), "truncated member");
    }
}
