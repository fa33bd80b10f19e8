//! Errors of network models: every one names the field and what is accepted.

/// A bad model setting or input file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NetError {
    /// A field has a value outside what is accepted.
    #[error("{field} = {value} is not accepted: {accepted}")]
    InvalidField { field: String, value: String, accepted: String },
    /// A Mahimahi trace line could not be read.
    #[error("line {line}: {msg}")]
    TraceParse { line: usize, msg: String },
}

impl NetError {
    /// Shorthand for [`NetError::InvalidField`].
    pub fn invalid(field: &str, value: impl ToString, accepted: &str) -> Self {
        NetError::InvalidField {
            field: field.to_string(),
            value: value.to_string(),
            accepted: accepted.to_string(),
        }
    }
}
