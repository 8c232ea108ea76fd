//! Commands a build would run: all of them, except those whose `test` fails. A test is
//! run only with `run_tests` (it can have side effects); without it, a command with a
//! test is a possible change. A `defaults` script is a command too, run only likewise.

use super::{Item, Options, Pending};
use crate::commands::{Setting, test_passes, with_defaults};
use crate::document::{self, CommandEntry};
use crate::model;

/// Returns the commands that would (or may) run, for the change record.
pub(super) fn plan(
    config: &str,
    entries: &[document::Item<CommandEntry>],
    options: Options,
    pending: &Pending,
    items: &mut Vec<Item>,
) -> Result<Vec<String>, String> {
    let mut ran = Vec::new();
    for entry in entries {
        let name = &entry.key;
        let spec = match entry.parsed()? {
            CommandEntry::Spec(spec) => spec.clone(),
            CommandEntry::Deferred(_) if !options.run_tests => {
                items.push(Item::change(
                    "commands",
                    format!("run {name}, with attributes from its defaults script (not run without --run-tests)"),
                ));
                ran.push(name.to_string());
                continue;
            }
            CommandEntry::Deferred(attributes) => {
                let attributes = with_defaults(config, name, attributes)?;
                model::command_spec(config, name, &attributes).map_err(|e| e.0)?
            }
        };
        // The build refuses a `runas` user that does not exist; one created above has
        // no account to run a test as yet.
        let runas_created_above = spec.runas.as_ref().is_some_and(|u| pending.users.contains(u.as_str()));
        if let Some(user) = spec.runas.as_ref().filter(|_| !runas_created_above) {
            cfn_host::users::user(user).ok_or_else(|| format!("{user} is not a valid user name"))?;
        }
        let shown = spec.command.shown();
        let text = match &spec.test {
            None => format!("run {name}: {shown}"),
            Some(test) if !options.run_tests => {
                format!("run {name} if its test passes (test not run without --run-tests: {}): {shown}", test.shown())
            }
            Some(test) if runas_created_above => {
                format!(
                    "run {name} if its test passes (test not run: its user is created above: {}): {shown}",
                    test.shown()
                )
            }
            Some(_) => {
                if !test_passes(&spec, &Setting::of(&spec)?)? {
                    items.push(Item::remark("commands", format!("skip {name}: its test fails")));
                    continue;
                }
                format!("run {name} (its test passes): {shown}")
            }
        };
        items.push(Item::change("commands", text));
        ran.push(name.to_string());
    }
    Ok(ran)
}
