//! `cfn-bootstrap render`: a template resource's Metadata with its intrinsic functions
//! resolved, printed as `cfn-get-metadata` prints it after a stack creation, so that
//! `cfn-bootstrap render -t t.yaml -r WebServer | cfn-init -` runs a template's Init
//! locally. Exit 0, 1 when the template cannot be rendered, 2 on a usage error.

use cfn_linter::template_input::{TEMPLATE, inputs, metadata, read_template, template_arg, with_template_values};
use cfn_python::json as pyjson;
use clap::{Arg, ArgMatches, Command};
use std::io::Write;
use std::process::ExitCode;

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

pub fn run(matches: &ArgMatches) -> ExitCode {
    let value_of = |name: &str| matches.get_one::<String>(name).cloned();
    let (Some(path), Some(resource)) = (value_of(TEMPLATE), value_of("resource")) else {
        return ExitCode::from(2);
    };
    let rendered =
        read_template(&path).and_then(|template| metadata(&template, &resource, &inputs(matches, value_of("region"))));
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

fn failure(message: &str) -> ExitCode {
    eprintln!("cfn-bootstrap render: {message}");
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_is_valid() {
        command().debug_assert();
    }
}
