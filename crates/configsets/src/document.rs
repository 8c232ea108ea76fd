//! `AWS::CloudFormation::Init` and `AWS::CloudFormation::Authentication` parsed once into
//! typed structures, each value with the JSON pointer it came from.
//!
//! Nothing here fails as a whole: the reference reports a bad section only when its turn
//! comes (earlier sections take effect first), so each section, and each entry of it,
//! holds its own `Result` with the message cfn-init prints for it. The parsers are the
//! ones the sections use, so the messages are the same.

use crate::configsets::{self, ConfigSets};
use crate::locations::pointer_step;
use crate::model::{self, CommandSpec, FileSpec, ModelError, kind};
use crate::packages::{self, Package, rpm::RpmEntry};
use crate::services::{self, Dependencies};
use crate::users::UserSpec;
use crate::{groups, users};
use cfn_aws::auth::{AuthBlock, Authentication};
use cfn_python::truth::{is_true, is_truthy};
use serde_json::{Map, Value};

pub const INIT_KEY: &str = "AWS::CloudFormation::Init";
pub const AUTH_KEY: &str = "AWS::CloudFormation::Authentication";

/// One keyed entry: its key, where it is, and what it parsed to.
#[derive(Debug, Clone)]
pub struct Item<T> {
    pub key: String,
    pub pointer: String,
    pub spec: Result<T, ModelError>,
}

/// A section of a config: whether it is there (truthy, as the engine decides) and its
/// entries in the order cfn-init processes them, or why it is not a mapping.
#[derive(Debug, Clone)]
pub struct Section<T> {
    pub pointer: String,
    pub present: bool,
    pub items: Result<Vec<Item<T>>, ModelError>,
}

impl<T> Item<T> {
    /// What the entry parsed to, or the message cfn-init stops with when its turn comes.
    pub fn parsed(&self) -> Result<&T, String> {
        self.spec.as_ref().map_err(|e| e.0.clone())
    }
}

impl<T> Section<T> {
    /// A section the config does not have.
    fn absent() -> Section<T> {
        Section { pointer: String::new(), present: false, items: Ok(Vec::new()) }
    }

    /// The entries, none when the section is absent or broken.
    pub fn entries(&self) -> &[Item<T>] {
        self.items.as_deref().unwrap_or(&[])
    }

    /// The entries, or the message cfn-init stops with when the section is not a
    /// mapping (once its turn comes).
    pub fn checked_entries(&self) -> Result<&[Item<T>], String> {
        self.items.as_deref().map_err(|e| e.0.clone())
    }
}

/// What one package manager's entry in `packages` holds.
#[derive(Debug, Clone)]
pub enum ManagerPackages {
    /// apt, yum, dnf, zypper, python, rubygems.
    Named(Vec<Package>),
    Rpm(Vec<RpmEntry>),
    /// msi: refused on Linux when it lists anything.
    Msi {
        listed: bool,
    },
    /// A manager cfn-init does not know: it warns and skips it.
    Unsupported,
}

/// The service managers cfn-init knows (`windows` is refused on Linux when it lists any).
pub const SERVICE_MANAGERS: [&str; 3] = ["sysvinit", "systemd", "windows"];

/// One service's wishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceSpec {
    pub enabled: Option<bool>,
    pub ensure_running: Option<bool>,
    pub depends_on: Dependencies,
}

/// A `commands` entry: its attributes, or — with a `defaults` script — the attributes
/// the script's output is merged into when the command's turn comes.
#[derive(Debug, Clone)]
pub enum CommandEntry {
    Spec(CommandSpec),
    Deferred(Map<String, Value>),
}

#[derive(Debug, Clone)]
pub struct Sections {
    pub packages: Section<ManagerPackages>,
    pub groups: Section<Option<String>>,
    pub users: Section<UserSpec>,
    /// Target directory → location.
    pub sources: Section<String>,
    pub files: Section<FileSpec>,
    pub commands: Section<CommandEntry>,
    /// Manager → its services.
    pub services: Section<Vec<Item<ServiceSpec>>>,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub name: String,
    pub pointer: String,
    /// Its sections, or why it is not an object.
    pub sections: Result<Sections, ModelError>,
}

/// The whole `AWS::CloudFormation::Init` (and the authentication blocks it may use).
#[derive(Debug, Clone)]
pub struct InitDocument {
    pub pointer: String,
    pub config_sets: Result<ConfigSets, ModelError>,
    /// Every key but `configSets`, in document order.
    pub configs: Vec<Config>,
    pub authentication: Vec<Item<AuthBlock>>,
}

impl InitDocument {
    /// Parses the `AWS::CloudFormation::Init` object of `metadata` (the whole resource
    /// metadata) and its authentication blocks; `Err` when Init is absent, empty or not
    /// an object.
    pub fn parse(metadata: &Value) -> Result<InitDocument, ModelError> {
        match metadata.get(INIT_KEY) {
            Some(Value::Object(init)) if !init.is_empty() => Ok(InitDocument::from_init(init, metadata.get(AUTH_KEY))),
            Some(other) if is_truthy(other) => {
                Err(ModelError(format!("{INIT_KEY} must be an object, not {}", kind(other))))
            }
            _ => Err(ModelError(format!("Could not find '{INIT_KEY}' key"))),
        }
    }

    /// Parses an `AWS::CloudFormation::Init` object; `authentication` is the
    /// `AWS::CloudFormation::Authentication` value, if it is to be parsed too.
    pub fn from_init(init: &Map<String, Value>, authentication: Option<&Value>) -> InitDocument {
        let pointer = format!("/{}", pointer_step(INIT_KEY));
        let configs = init
            .iter()
            .filter(|(name, _)| *name != "configSets")
            .map(|(name, value)| parse_config(name, &format!("{pointer}/{}", pointer_step(name)), value))
            .collect();
        InitDocument {
            pointer,
            config_sets: configsets::resolve(init),
            configs,
            authentication: parse_authentication(authentication),
        }
    }

    pub fn config(&self, name: &str) -> Option<&Config> {
        self.configs.iter().find(|c| c.name == name)
    }

    pub fn authentication(&self, name: &str) -> Option<&Item<AuthBlock>> {
        self.authentication.iter().find(|a| a.key == name)
    }
}

fn parse_config(name: &str, pointer: &str, value: &Value) -> Config {
    let sections = match value {
        Value::Object(map) => Ok(Sections::parse(name, pointer, map)),
        other => Err(ModelError(format!("config {name}: must be an object, not {}", kind(other)))),
    };
    Config { name: name.to_string(), pointer: pointer.to_string(), sections }
}

impl Sections {
    /// The sections of a config the document does not have (the implicit `config` of
    /// an Init without configSets): nothing to do.
    pub fn absent() -> Sections {
        Sections {
            packages: Section::absent(),
            groups: Section::absent(),
            users: Section::absent(),
            sources: Section::absent(),
            files: Section::absent(),
            commands: Section::absent(),
            services: Section::absent(),
        }
    }

    /// The sections of the config `name` (at `pointer`), each parsed with its section's
    /// parser.
    pub fn parse(name: &str, pointer: &str, map: &Map<String, Value>) -> Sections {
        let at = |section: &str| (map.get(section), format!("{pointer}/{section}"));
        Sections {
            packages: managers(
                name,
                "packages",
                at("packages"),
                |keys| packages::manager_order(keys),
                &parse_manager_packages,
            ),
            groups: section(name, "groups", at("groups"), |_, key, value| groups::gid(name, key, value)),
            users: section(name, "users", at("users"), |_, key, value| users::user_spec(name, key, value)),
            sources: section(name, "sources", at("sources"), |_, key, value| match value {
                Value::String(s) => Ok(s.clone()),
                other => Err(ModelError::at(name, "sources", key, format!("must be a string, not {}", kind(other))).0),
            }),
            files: section(name, "files", at("files"), |_, key, value| {
                model::file_spec(name, key, value).map_err(|e| e.0)
            }),
            commands: section(name, "commands", at("commands"), |_, key, value| parse_command(name, key, value)),
            services: services(name, at("services")),
        }
    }
}

type Parse<'a, T> = &'a dyn Fn(&str, &str, &Value) -> Result<T, String>;

/// A section whose entries run in key order (groups, users, sources, files, commands).
fn section<T>(
    config: &str,
    name: &str,
    (value, pointer): (Option<&Value>, String),
    parse: impl Fn(&str, &str, &Value) -> Result<T, String>,
) -> Section<T> {
    let items = model::sorted_entries(config, name, value).map(|entries| {
        entries
            .into_iter()
            .map(|(key, value)| Item {
                key: key.clone(),
                pointer: format!("{pointer}/{}", pointer_step(key)),
                spec: parse(config, key, value).map_err(ModelError),
            })
            .collect()
    });
    Section { pointer, present: value.is_some_and(is_truthy), items }
}

/// A section keyed by manager (packages, services), in the order cfn-init runs them.
fn managers<T>(
    config: &str,
    name: &str,
    (value, pointer): (Option<&Value>, String),
    order: fn(Vec<&String>) -> Vec<&String>,
    parse: Parse<'_, T>,
) -> Section<T> {
    let items = match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => Ok(order(map.keys().collect())
            .into_iter()
            .map(|manager| Item {
                key: manager.clone(),
                pointer: format!("{pointer}/{}", pointer_step(manager)),
                spec: parse(config, manager, &map[manager.as_str()]).map_err(ModelError),
            })
            .collect()),
        Some(other) => Err(ModelError(format!("config {config}: {name} must be an object, not {}", kind(other)))),
    };
    Section { pointer, present: value.is_some_and(is_truthy), items }
}

/// `services`: manager → its services, in document order.
fn services(config: &str, at: (Option<&Value>, String)) -> Section<Vec<Item<ServiceSpec>>> {
    let mut section = managers(config, "services", at, |keys| keys, &parse_services);
    for manager in section.items.iter_mut().flatten() {
        for service in manager.spec.iter_mut().flatten() {
            service.pointer = format!("{}/{}", manager.pointer, service.pointer);
        }
    }
    section
}

fn parse_manager_packages(config: &str, manager: &str, value: &Value) -> Result<ManagerPackages, String> {
    Ok(match manager {
        "apt" | "yum" | "dnf" | "zypper" | "python" | "rubygems" => {
            ManagerPackages::Named(packages::parse_packages(config, manager, value)?)
        }
        "rpm" => ManagerPackages::Rpm(packages::rpm::parse_locations(config, value)?),
        "msi" => ManagerPackages::Msi { listed: is_truthy(value) },
        _ => ManagerPackages::Unsupported,
    })
}

fn parse_services(config: &str, manager: &str, value: &Value) -> Result<Vec<Item<ServiceSpec>>, String> {
    let map = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Object(map) => map,
        other => return Err(format!("config {config}: services {manager} must be an object, not {}", kind(other))),
    };
    Ok(map
        .iter()
        .map(|(name, properties)| Item {
            key: name.clone(),
            // Made whole by `services`, which knows the manager's pointer.
            pointer: pointer_step(name),
            spec: match properties {
                Value::Object(p) => Ok(ServiceSpec {
                    enabled: p.get("enabled").map(is_true),
                    ensure_running: p.get("ensureRunning").map(is_true),
                    depends_on: services::dependencies(p),
                }),
                other => Err(ModelError(format!(
                    "config {config}, services {manager} {name}: must be an object, not {}",
                    kind(other)
                ))),
            },
        })
        .collect())
}

fn parse_command(config: &str, name: &str, value: &Value) -> Result<CommandEntry, String> {
    let attributes = model::command_attributes(config, name, value).map_err(|e| e.0)?;
    if attributes.get("defaults").is_some_and(|d| !d.is_null()) {
        return Ok(CommandEntry::Deferred(attributes.clone()));
    }
    model::command_spec(config, name, attributes).map(CommandEntry::Spec).map_err(|e| e.0)
}

/// Each block through cfn-init's own parser; a block it would drop holds the warning it
/// would log.
fn parse_authentication(value: Option<&Value>) -> Vec<Item<AuthBlock>> {
    let Some(Value::Object(blocks)) = value else { return Vec::new() };
    blocks
        .iter()
        .map(|(name, block)| {
            let one: Map<String, Value> = [(name.clone(), block.clone())].into_iter().collect();
            let parsed = Authentication::parse(&Value::Object(one)).get(name).cloned();
            Item {
                key: name.clone(),
                pointer: format!("/{}/{}", pointer_step(AUTH_KEY), pointer_step(name)),
                spec: parsed.ok_or_else(|| ModelError(dropped_block_reason(block))),
            }
        })
        .collect()
}

/// The warning cfn-init logs when it drops an authentication block.
fn dropped_block_reason(block: &Value) -> String {
    let kind = match block.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    match kind.to_ascii_lowercase().as_str() {
        "s3" => r#"S3 auth requires either "accessKeyId" and "secretKey" or "roleName""#.to_string(),
        "basic" => r#"Basic auth requires "username" and "password""#.to_string(),
        _ => format!("Unrecognized authentication type: {kind}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn document(init: Value) -> InitDocument {
        InitDocument::parse(&json!({ INIT_KEY: init, AUTH_KEY: {"b": {"type": "basic"}} })).unwrap()
    }

    #[test]
    fn sections_hold_their_own_errors_with_pointers() {
        let doc = document(json!({
            "config": {
                "files": {"/b": {"content": "x"}, "/a": {"mode": "rw"}},
                "commands": {"01": {"cwd": "/"}, "02": {"command": "x", "defaults": "y"}},
                "users": [1],
                "packages": {"yum": {"x": []}, "apt": {"y": "1"}, "brew": {}},
                "services": {"systemd": {"nginx": {"enabled": "true"}}}
            }
        }));
        let config = doc.config("config").unwrap();
        let sections = config.sections.as_ref().unwrap();
        let files = sections.files.entries();
        assert_eq!(files.iter().map(|f| f.key.as_str()).collect::<Vec<_>>(), ["/a", "/b"]);
        assert_eq!(files[0].pointer, "/AWS::CloudFormation::Init/config/files/~1a");
        assert_eq!(
            files[0].spec.as_ref().unwrap_err().0,
            "config config, files /a: mode must be an octal string like \"000644\""
        );
        assert!(files[1].spec.is_ok());
        let commands = sections.commands.entries();
        assert_eq!(
            commands[0].spec.as_ref().unwrap_err().0,
            "01 does not specify the 'command' attribute, which is required"
        );
        assert!(matches!(commands[1].spec, Ok(CommandEntry::Deferred(_))));
        assert_eq!(sections.users.items.as_ref().unwrap_err().0, "config config: users must be an object, not a list");
        let managers: Vec<_> = sections.packages.entries().iter().map(|m| m.key.as_str()).collect();
        assert_eq!(managers, ["apt", "yum", "brew"]);
        assert!(matches!(sections.packages.entries()[2].spec, Ok(ManagerPackages::Unsupported)));
        let services = sections.services.entries()[0].spec.as_ref().unwrap();
        assert_eq!(services[0].spec.as_ref().unwrap().enabled, Some(true));
        assert!(!sections.groups.present);
        assert_eq!(
            doc.authentication("b").unwrap().spec.as_ref().unwrap_err().0,
            r#"Basic auth requires "username" and "password""#
        );
    }

    #[test]
    fn configs_and_sets_are_kept_apart() {
        let doc = document(json!({"configSets": {"default": ["a", "b"]}, "a": {}, "b": "x"}));
        assert_eq!(doc.configs.len(), 2);
        assert_eq!(
            doc.config("b").unwrap().sections.as_ref().unwrap_err().0,
            "config b: must be an object, not a string"
        );
        assert_eq!(doc.config_sets.as_ref().unwrap()[0].1, ["a", "b"]);
        assert!(InitDocument::parse(&json!({})).is_err());
    }
}
