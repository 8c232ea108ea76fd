//! `cfn-bootstrap render`: a template resource's Metadata with its intrinsic functions
//! resolved, printed as `cfn-get-metadata` prints it after a stack creation, so that
//! `cfn-bootstrap render -t t.yaml -r WebServer | cfn-init -` runs a template's Init
//! locally. Exit 0, 1 when the template cannot be rendered, 2 on a usage error.

use cfn_python::json as pyjson;
use cfn_template::{ErrorKind, Inputs, Missing, Template};
use clap::{Arg, ArgAction, ArgMatches, Command};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::ExitCode;

/// The id of `-t`.
pub const TEMPLATE: &str = "template";

pub fn command() -> Command {
    let command = Command::new("render")
        .about("Print a template resource's Metadata with its intrinsic functions resolved")
        .long_about(
            "Print a template resource's Metadata with its intrinsic functions resolved, exactly as\n\
             cfn-get-metadata prints it after a stack creation with the same values, so that\n\
             `cfn-bootstrap render -t site.yaml -r WebServer | cfn-init -` runs the template's Init locally.\n\n\
             The template is JSON, or YAML with CloudFormation's short-form tags (!Ref, !Sub, !GetAtt, ...).\n\
             What only a stack would know is given: parameters (-p), other resources' values (--attribute),\n\
             other stacks' exports (--import-value). Anything left unresolved is an error naming the\n\
             expression and its line.",
        )
        .arg(template_arg().required(true))
        .arg(
            Arg::new("resource")
                .short('r')
                .long("resource")
                .value_name("RESOURCE")
                .required(true)
                .help("The logical id of the resource whose Metadata is printed"),
        )
        .arg(
            Arg::new("region")
                .long("region")
                .value_name("REGION")
                .help("AWS::Region (default: us-east-1); AWS::Partition and AWS::URLSuffix follow from it"),
        );
    with_template_values(command)
}

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

pub fn run(matches: &ArgMatches) -> ExitCode {
    let (Some(path), Some(resource)) = (value_of(matches, TEMPLATE), value_of(matches, "resource")) else {
        return ExitCode::from(2);
    };
    let rendered = read_template(&path)
        .and_then(|template| metadata(&template, &resource, &inputs(matches, value_of(matches, "region"))));
    let metadata = match rendered {
        Ok(metadata) => metadata,
        Err(message) => return failure(&message),
    };
    // As cfn-get-metadata prints it (GETMD-03): a string as it is, anything else as JSON.
    let text = match &metadata {
        serde_json::Value::String(s) => s.clone(),
        other => pyjson::to_pretty(other),
    };
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{text}").and_then(|_| stdout.flush()).is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
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

fn failure(message: &str) -> ExitCode {
    eprintln!("cfn-bootstrap render: {message}");
    ExitCode::FAILURE
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

    #[test]
    fn the_command_is_valid() {
        command().debug_assert();
    }
}
