//! Errors of network models: every one names the field (or the trace line) and what is accepted.

/// A bad model setting or input file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// A field has a value outside what is accepted.
    #[error("{field} = {value} is not accepted: {accepted}")]
    InvalidField {
        /// Dotted name of the field, e.g. `loss.p`.
        field: String,
        /// The value given, as text.
        value: String,
        /// What would have been accepted, e.g. `a probability in [0, 1]`.
        accepted: String,
    },
    /// A field of a scenario is wrong; the message says what is accepted (a scenario-level
    /// check: topology, link specs in the scenario's units).
    #[error("{field}: {message}")]
    Field {
        /// Dotted path of the field in the scenario, e.g. `links[2].endpoints[1]`.
        field: String,
        /// What is wrong and what is accepted.
        message: String,
    },
    /// A Mahimahi trace could not be read.
    #[error("line {line}: {msg}")]
    TraceParse {
        /// 1-based line number; 0 when the problem is the trace as a whole (e.g. it is empty).
        line: usize,
        /// What is wrong with that line.
        msg: String,
    },
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

    /// Shorthand for [`NetError::Field`].
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        NetError::Field {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same error with its field name prefixed by `prefix.` (for nested settings).
    pub fn in_field(self, prefix: &str) -> Self {
        match self {
            NetError::InvalidField {
                field,
                value,
                accepted,
            } => NetError::InvalidField {
                field: format!("{prefix}.{field}"),
                value,
                accepted,
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_field_and_the_line() {
        let e = NetError::invalid("p", 1.5, "a probability in [0, 1]").in_field("loss");
        assert_eq!(
            e.to_string(),
            "loss.p = 1.5 is not accepted: a probability in [0, 1]"
        );
        let e = NetError::TraceParse {
            line: 3,
            msg: "bad".into(),
        };
        assert_eq!(e.clone().in_field("x"), e);
        assert_eq!(e.to_string(), "line 3: bad");
    }
}
