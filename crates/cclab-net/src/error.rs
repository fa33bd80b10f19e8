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

/// A serde_json error in a reader's words: no "at line 1 column 231", and an integer type's
/// range instead of its Rust name ("invalid value: integer `4294967296`, expected u32" becomes
/// "4294967296 is not accepted: a whole number from 0 to 4294967295").
pub fn plain_json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let text = match text.rfind(" at line ") {
        Some(i) => &text[..i],
        None => &text[..],
    };
    let range = |ty: &str| -> Option<String> {
        Some(match ty {
            "u8" => format!("a whole number from 0 to {}", u8::MAX),
            "u16" => format!("a whole number from 0 to {}", u16::MAX),
            "u32" => format!("a whole number from 0 to {}", u32::MAX),
            "u64" | "usize" => format!("a whole number from 0 to {}", u64::MAX),
            "i32" => format!("a whole number from {} to {}", i32::MIN, i32::MAX),
            "i64" => format!("a whole number from {} to {}", i64::MIN, i64::MAX),
            "f64" | "f32" => "a finite number".to_string(),
            _ => return None,
        })
    };
    // "invalid value: integer `X`, expected u32" / "invalid type: floating point `X`, expected u64"
    for head in ["invalid value: ", "invalid type: "] {
        if let Some(rest) = text.strip_prefix(head) {
            if let Some((got, want)) = rest.rsplit_once(", expected ") {
                let shown = match (got.find('`'), got.rfind('`')) {
                    (Some(a), Some(b)) if b > a => got[a + 1..b].to_string(),
                    _ => got.to_string(),
                };
                let n = shown.chars().count();
                let shown = if n > 80 {
                    format!(
                        "{}... ({n} characters)",
                        shown.chars().take(60).collect::<String>()
                    )
                } else {
                    shown
                };
                let want = range(want).unwrap_or_else(|| json_kind(want));
                return format!("{} is not accepted: {want}", json_kind(&shown));
            }
        }
    }
    if let Some(rest) = text.strip_prefix("missing field `") {
        return format!("required: {}", rest.trim_end_matches('`'));
    }
    if let Some(rest) = text.strip_prefix("unknown field `") {
        if let Some((key, accepted)) = rest.split_once("`, expected ") {
            return format!(
                "unknown key {key:?}; accepted: {}",
                accepted.replace('`', "")
            );
        }
    }
    if let Some(rest) = text.strip_prefix("unknown variant `") {
        if let Some((v, accepted)) = rest.split_once("`, expected ") {
            return format!("{v:?} is not accepted: {}", accepted.replace('`', ""));
        }
    }
    match text {
        "number out of range" => "the number is out of range".to_string(),
        // serde_json reads no NaN or infinity: the writer put a bare token there.
        "expected value" => "not a value accepted here (NaN and infinity never are)".into(),
        t if t.starts_with("lone ") || t.contains("surrogate") => {
            "text that is not valid Unicode (an unpaired surrogate)".into()
        }
        t => t.to_string(),
    }
}

/// serde's names of JSON kinds as a scenario file calls them: a map or struct is a table, a
/// sequence a list.
fn json_kind(what: &str) -> String {
    match what {
        "map" | "a map" => "a table".into(),
        "sequence" | "a sequence" => "a list".into(),
        "a boolean" => "true or false".into(),
        w if w.starts_with("struct ") || w.starts_with("internally tagged enum") => {
            "a table".into()
        }
        w => w.to_string(),
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
