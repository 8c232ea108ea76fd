//! A template and what only a stack would know, from the command line: `-t FILE`,
//! parameters, other resources' attributes, exports, the region and zones. Shared by
//! `validate -t`, `render` and `plan -t`, so the three take the same options and read a
//! template the same way.

use cfn_template::{ErrorKind, Inputs, Missing, Template};
use clap::{Arg, ArgAction, ArgMatches, Command};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;

/// The id of `-t`.
pub const TEMPLATE: &str = "template";

/// `-t FILE`: a template, for render and for the `-t` of validate and plan.
pub fn template_arg() -> Arg {
    Arg::new(TEMPLATE)
        .short('t')
        .long("template")
        .value_name("FILE")
        .value_hint(clap::ValueHint::FilePath)
        .help("The template, JSON or YAML (- for standard input)")
}

/// The options that give a template what only a stack would know, shared by render and
/// the `-t` of validate and plan (which take `-r` and `--region` as they do for a stack).
pub fn with_template_values(command: Command) -> Command {
    let pair = |name: &'static str, value_name: &'static str, help: &'static str| {
        Arg::new(name).long(name).value_name(value_name).action(ArgAction::Append).value_parser(key_value).help(help)
    };
    command
        .arg(
            Arg::new("parameter")
                .short('p')
                .long("parameter")
                .value_name("KEY=VALUE")
                .action(ArgAction::Append)
                .value_parser(key_value)
                .help("A parameter's value (a list parameter's as a,b,c); others take their Default"),
        )
        .arg(Arg::new("stack-name").long("stack-name").value_name("NAME").help("AWS::StackName (default: stack)"))
        .arg(
            Arg::new("stack-id")
                .long("stack-id")
                .value_name("ARN")
                .help("AWS::StackId (default: the stack's ARN with a zero UUID)"),
        )
        .arg(Arg::new("account-id").long("account-id").value_name("ID").help("AWS::AccountId (default: 123456789012)"))
        .arg(pair(
            "attribute",
            "RES=VALUE|RES.ATTR=VALUE",
            "Another resource's value: RES=VALUE for Ref RES, RES.ATTR=VALUE for Fn::GetAtt and ${RES.ATTR}",
        ))
        .arg(pair("import-value", "EXPORT=VALUE", "Another stack's export, for Fn::ImportValue"))
        .arg(
            Arg::new("availability-zones")
                .long("availability-zones")
                .value_name("ZONE,...")
                .help("Fn::GetAZs for the region (default: the region's zones a, b and c)"),
        )
}

/// `KEY=VALUE`, split at the first `=`; the value may be empty.
fn key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {text:?}")),
    }
}

fn pairs(matches: &ArgMatches, name: &str) -> BTreeMap<String, String> {
    matches.get_many::<(String, String)>(name).into_iter().flatten().cloned().collect()
}

fn value_of(matches: &ArgMatches, name: &str) -> Option<String> {
    matches.get_one::<String>(name).cloned()
}

/// The values of [`with_template_values`]' options; `region` is AWS::Region.
pub fn inputs(matches: &ArgMatches, region: Option<String>) -> Inputs {
    let defaults = Inputs::default();
    Inputs {
        parameters: pairs(matches, "parameter"),
        region: region.unwrap_or(defaults.region),
        stack_name: value_of(matches, "stack-name").unwrap_or(defaults.stack_name),
        stack_id: value_of(matches, "stack-id"),
        account_id: value_of(matches, "account-id").unwrap_or(defaults.account_id),
        attributes: pairs(matches, "attribute"),
        exports: pairs(matches, "import-value"),
        availability_zones: value_of(matches, "availability-zones")
            .map(|zones| zones.split(',').map(|z| z.trim().to_string()).collect()),
    }
}

/// The template at `path` (`-`: standard input), parsed; an error is the message to print.
pub fn read_template(path: &str) -> Result<(Template, String), String> {
    let source = read_source(path)?;
    let template = Template::parse(path, &source).map_err(|e| e.to_string())?;
    Ok((template, source))
}

/// A resource's Metadata resolved; an error is the message to print, with a `help:` line
/// naming the option that gives a missing value.
pub fn metadata((template, _): &(Template, String), resource: &str, inputs: &Inputs) -> Result<Value, String> {
    template.metadata(resource, inputs).map_err(|error| {
        let help = match &error.kind {
            ErrorKind::Missing(Missing::Parameter(name)) => format!("\nhelp: give it with -p {name}=VALUE"),
            ErrorKind::Missing(Missing::Attribute(name)) => format!("\nhelp: give it with --attribute {name}=VALUE"),
            ErrorKind::Missing(Missing::Export(name)) => format!("\nhelp: give it with --import-value {name}=VALUE"),
            _ => String::new(),
        };
        format!("{error}{help}")
    })
}

/// A template's text: the file, or standard input for `-`.
pub fn read_source(path: &str) -> Result<String, String> {
    let mut bytes = Vec::new();
    let read = if path == "-" {
        std::io::stdin().lock().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::read(path).map(|b| bytes = b)
    };
    read.map_err(|e| format!("cannot read {path}: {}", cfn_python::strerror(&e)))?;
    String::from_utf8(bytes).map_err(|_| format!("{path} is not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_value_pairs_split_at_the_first_equals_sign() {
        assert_eq!(key_value("A=b=c"), Ok(("A".into(), "b=c".into())));
        assert_eq!(key_value("A="), Ok(("A".into(), String::new())));
        assert!(key_value("A").is_err());
        assert!(key_value("=b").is_err());
    }
}
