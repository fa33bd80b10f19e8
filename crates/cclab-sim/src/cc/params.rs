//! Reading an algorithm's tunables from `cc_params`: every value checked, errors naming the
//! tunable and what is accepted. Names are checked against the algorithm's `ParamInfo` list by
//! `registry::build` before an algorithm's `build` runs.

use super::registry::{CcError, ParamValue, Params};

/// Typed access to one algorithm's `cc_params`.
pub struct ParamReader<'a> {
    algorithm: &'a str,
    params: &'a Params,
}

impl<'a> ParamReader<'a> {
    /// Read `params` for `algorithm` (the name the user gave, for errors).
    pub fn new(algorithm: &'a str, params: &'a Params) -> Self {
        ParamReader { algorithm, params }
    }

    /// The error for `param` = `value`, accepting `accepted`.
    pub fn bad(&self, param: &str, value: &ParamValue, accepted: &str) -> CcError {
        CcError::BadValue {
            algorithm: self.algorithm.to_string(),
            param: param.to_string(),
            value: value.to_string(),
            accepted: accepted.to_string(),
        }
    }

    /// A boolean (true/false or 0/1), or `default`.
    pub fn bool(&self, param: &str, default: bool) -> Result<bool, CcError> {
        match self.params.get(param) {
            None => Ok(default),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| self.bad(param, v, "true/false or 0/1")),
        }
    }

    /// An integer in [lo, hi], or `default`.
    pub fn int(&self, param: &str, default: i64, lo: i64, hi: i64) -> Result<i64, CcError> {
        match self.params.get(param) {
            None => Ok(default),
            Some(v) => v
                .as_int()
                .filter(|i| (lo..=hi).contains(i))
                .ok_or_else(|| self.bad(param, v, &format!("an integer {lo}..{hi}"))),
        }
    }

    /// A real number accepted by `ok`, or `default`; `accepted` describes the range.
    pub fn float(
        &self,
        param: &str,
        default: f64,
        ok: impl Fn(f64) -> bool,
        accepted: &str,
    ) -> Result<f64, CcError> {
        match self.params.get(param) {
            None => Ok(default),
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite() && ok(*x))
                .ok_or_else(|| self.bad(param, v, accepted)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_checks() {
        let p: Params = [
            ("a".to_string(), ParamValue::Int(1)),
            ("b".to_string(), ParamValue::Float(2.5)),
            ("c".to_string(), ParamValue::Int(99)),
        ]
        .into_iter()
        .collect();
        let r = ParamReader::new("algo", &p);
        assert!(r.bool("a", false).unwrap());
        assert_eq!(r.float("b", 0.0, |x| x > 0.0, "> 0").unwrap(), 2.5);
        assert_eq!(r.int("missing", 7, 0, 10).unwrap(), 7);
        let e = r.int("c", 0, 0, 10).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cc_params.c = 99 is out of range for algo: accepted an integer 0..10"
        );
    }
}
