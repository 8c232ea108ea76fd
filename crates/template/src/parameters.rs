//! Parameter values: given or default, typed as CloudFormation types them when a `Ref`
//! reads them. A list type (`CommaDelimitedList`, `List<…>`) is a list of strings, split
//! at commas with each member space-trimmed; every other type is a string (a `Number`
//! too: "when you use the parameter elsewhere in your template (for example, by using
//! the Ref intrinsic function), the parameter value becomes a string"). `NoEcho` only
//! masks the value in DescribeStacks: a `Ref` in Metadata gives the value itself.

use crate::error::{Error, ErrorKind, Missing};
use crate::{Inputs, Template};
use serde_json::Value;
use std::collections::BTreeMap;

/// A parameter's value for `Ref`, or why it has none.
#[derive(Debug, Clone)]
pub enum Parameter {
    Value(Value),
    /// `AWS::SSM::Parameter::Value<…>`: the value is in Parameter Store, out of reach.
    StoredInSsm(String),
    /// No value given and no Default, when checking (see [`crate::unknown`]): any value of
    /// its type (`number`: a `Number`), one of `allowed` when the declaration lists
    /// AllowedValues (a single one is the value itself).
    Unknown {
        list: bool,
        number: bool,
        allowed: Option<Vec<String>>,
    },
}

/// The parameters' values; with `unknowns`, a parameter without a value (or one stored in
/// Parameter Store) is [`Parameter::Unknown`] instead of an error.
pub fn resolve(template: &Template, inputs: &Inputs, unknowns: bool) -> Result<BTreeMap<String, Parameter>, Error> {
    let declared = template.value().get("Parameters").and_then(Value::as_object);
    let error = |kind: ErrorKind, name: &str, message: String| {
        Error::new(kind, template.name(), message)
            .at(template.position(&format!("/Parameters/{name}")))
            .with_pointer(declared.is_some_and(|d| d.contains_key(name)).then(|| format!("/Parameters/{name}")))
    };
    let unknown: Vec<&str> = inputs
        .parameters
        .keys()
        .filter(|k| !declared.is_some_and(|d| d.contains_key(*k)))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        let message = format!("Parameters: [{}] do not exist in the template", unknown.join(", "));
        return Err(error(ErrorKind::Input, unknown[0], message));
    }
    let mut values = BTreeMap::new();
    for (name, declaration) in declared.into_iter().flatten() {
        let kind = declaration.get("Type").and_then(Value::as_str).unwrap_or("String");
        let is_list = kind == "CommaDelimitedList" || kind.starts_with("List<");
        let unknown = || {
            let allowed = declaration.get("AllowedValues").and_then(Value::as_array);
            let allowed = allowed.map(|values| values.iter().filter_map(scalar_text).collect());
            Parameter::Unknown { list: is_list, number: kind == "Number", allowed: allowed.filter(|_| !is_list) }
        };
        // When checking, a NoEcho parameter has no value, given or Default: the check sees
        // the parameter by name wherever Init writes it (W010), whatever value a stack gives.
        if unknowns && is_no_echo(declaration) {
            values.insert(name.clone(), unknown());
            continue;
        }
        let text = match (inputs.parameters.get(name), declaration.get("Default")) {
            (Some(given), _) => given.clone(),
            (None, Some(Value::String(default))) => default.clone(),
            (None, Some(Value::Number(default))) => default.to_string(),
            (None, Some(Value::Bool(default))) => default.to_string(),
            (None, Some(_)) => {
                return Err(error(ErrorKind::Template, name, format!("the Default of {name} is not a string")));
            }
            (None, None) if unknowns => match unknown() {
                // The only value it may have.
                Parameter::Unknown { allowed: Some(only), .. } if only.len() == 1 => only[0].clone(),
                unknown => {
                    values.insert(name.clone(), unknown);
                    continue;
                }
            },
            (None, None) => {
                let message = format!("Parameters: [{name}] must have values");
                return Err(error(ErrorKind::Missing(Missing::Parameter(name.clone())), name, message));
            }
        };
        if let Some(allowed) = declaration.get("AllowedValues").and_then(Value::as_array)
            && !allowed.iter().any(|a| scalar_text(a).as_deref() == Some(text.as_str()))
        {
            let message = format!("Parameter '{name}' must be one of AllowedValues (given: {text:?})");
            return Err(error(ErrorKind::Input, name, message));
        }
        let value = if kind.starts_with("AWS::SSM::Parameter::") {
            if unknowns { unknown() } else { Parameter::StoredInSsm(text) }
        } else if is_list {
            let items: Vec<String> = text.split(',').map(|s| s.trim().to_string()).collect();
            if kind == "List<Number>" && !items.iter().all(|i| is_number(i)) {
                return Err(error(ErrorKind::Input, name, format!("Parameter '{name}' must be a list of numbers")));
            }
            Parameter::Value(Value::Array(items.into_iter().map(Value::String).collect()))
        } else {
            if kind == "Number" && !is_number(&text) {
                return Err(error(ErrorKind::Input, name, format!("Parameter '{name}' must be a number")));
            }
            Parameter::Value(Value::String(text))
        };
        values.insert(name.clone(), value);
    }
    Ok(values)
}

/// Whether a parameter's declaration has `NoEcho: true` (CloudFormation also takes the
/// string "true", in any case).
pub fn is_no_echo(declaration: &Value) -> bool {
    match declaration.get("NoEcho") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    }
}

fn is_number(text: &str) -> bool {
    text.trim().parse::<f64>().is_ok_and(f64::is_finite)
}

/// A string, number or boolean as text (how AllowedValues and Fn::Equals compare them).
pub fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values(template: &str, given: &[(&str, &str)]) -> Result<BTreeMap<String, Parameter>, Error> {
        let template = Template::parse("t.yaml", template).unwrap();
        let inputs = Inputs {
            parameters: given.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Inputs::default()
        };
        resolve(&template, &inputs, false)
    }

    fn value(params: &BTreeMap<String, Parameter>, name: &str) -> Value {
        match &params[name] {
            Parameter::Value(v) => v.clone(),
            other => panic!("{name} is {other:?}"),
        }
    }

    const TEMPLATE: &str = "Parameters:\n  Envs: {Type: CommaDelimitedList, Default: 'dev, test ,prod'}\n  \
        Port: {Type: Number, Default: 8080}\n  Secret: {Type: String, NoEcho: true}\n  \
        Size: {Type: String, Default: small, AllowedValues: [small, large]}\n  \
        Ami: {Type: 'AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>', Default: /aws/ami}\n\
        Resources:\n  R: {Type: 'AWS::CloudFormation::WaitConditionHandle'}\n";

    #[test]
    fn comma_delimited_lists_are_split_and_space_trimmed_numbers_are_strings_no_echo_is_kept() {
        let p = values(TEMPLATE, &[("Secret", "hunter2")]).unwrap();
        assert_eq!(value(&p, "Envs"), json!(["dev", "test", "prod"]));
        assert_eq!(value(&p, "Port"), json!("8080"));
        assert_eq!(value(&p, "Secret"), json!("hunter2"));
        assert!(matches!(&p["Ami"], Parameter::StoredInSsm(name) if name == "/aws/ami"));
    }

    #[test]
    fn given_values_override_defaults() {
        let p = values(TEMPLATE, &[("Secret", "s"), ("Envs", "a,b"), ("Port", "80"), ("Size", "large")]).unwrap();
        assert_eq!(value(&p, "Envs"), json!(["a", "b"]));
        assert_eq!(value(&p, "Port"), json!("80"));
        assert_eq!(value(&p, "Size"), json!("large"));
    }

    #[test]
    fn missing_unknown_and_disallowed_values_are_errors() {
        let e = values(TEMPLATE, &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Missing(Missing::Parameter("Secret".into())));
        assert_eq!(e.to_string(), "t.yaml:4:11: /Parameters/Secret: Parameters: [Secret] must have values");
        let e = values(TEMPLATE, &[("Secret", "s"), ("Nope", "x")]).unwrap_err();
        assert_eq!(e.message, "Parameters: [Nope] do not exist in the template");
        let e = values(TEMPLATE, &[("Secret", "s"), ("Size", "huge")]).unwrap_err();
        assert!(e.message.contains("must be one of AllowedValues"), "{e}");
        let e = values(TEMPLATE, &[("Secret", "s"), ("Port", "eighty")]).unwrap_err();
        assert!(e.message.contains("must be a number"), "{e}");
    }

    #[test]
    fn when_checking_a_parameter_without_a_value_is_unknown_of_its_type() {
        let template = "Parameters:\n  A: {Type: String, AllowedValues: [x, 'y']}\n  L: {Type: CommaDelimitedList}\n  \
            D: {Type: String, Default: d}\n  N: {Type: Number}\n  One: {Type: String, AllowedValues: [only]}\n  S: {Type: 'AWS::SSM::Parameter::Value<String>', Default: /p}\n\
            Resources:\n  R: {Type: 'AWS::CloudFormation::WaitConditionHandle'}\n";
        let template = Template::parse("t.yaml", template).unwrap();
        let p = resolve(&template, &Inputs::default(), true).unwrap();
        assert!(matches!(&p["A"], Parameter::Unknown { list: false, allowed: Some(a), .. } if a == &["x", "y"]));
        assert!(matches!(&p["L"], Parameter::Unknown { list: true, allowed: None, .. }));
        assert!(matches!(&p["N"], Parameter::Unknown { number: true, .. }));
        assert_eq!(value(&p, "D"), json!("d"));
        assert_eq!(value(&p, "One"), json!("only"));
        assert!(matches!(&p["S"], Parameter::Unknown { list: false, allowed: None, .. }));
    }

    #[test]
    fn when_checking_a_no_echo_parameter_is_unknown_even_with_a_default_or_a_value() {
        let template = "Parameters:\n  P: {Type: String, NoEcho: true, Default: hunter2}\n  \
            Q: {Type: String, NoEcho: 'TRUE', Default: x}\n  R: {Type: String, NoEcho: false, Default: r}\n\
            Resources:\n  W: {Type: 'AWS::CloudFormation::WaitConditionHandle'}\n";
        let template = Template::parse("t.yaml", template).unwrap();
        let p = resolve(&template, &Inputs::default(), true).unwrap();
        assert!(matches!(&p["P"], Parameter::Unknown { .. }));
        assert!(matches!(&p["Q"], Parameter::Unknown { .. }));
        assert_eq!(value(&p, "R"), json!("r"));
        assert_eq!(template.no_echo_parameters(), ["P", "Q"]);
        let given = Inputs { parameters: [("P".to_string(), "s3cret".to_string())].into(), ..Inputs::default() };
        assert!(matches!(&resolve(&template, &given, true).unwrap()["P"], Parameter::Unknown { .. }));
        // A stack's run uses the Default as CloudFormation does.
        assert_eq!(value(&resolve(&template, &Inputs::default(), false).unwrap(), "P"), json!("hunter2"));
    }
}
