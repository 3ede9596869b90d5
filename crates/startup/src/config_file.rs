//! One TOML configuration file for a binary (docs/operations.md, "The configuration file"),
//! given by `--config FILE` or `TESSERA_CONFIG`.
//!
//! Every flag has a key: its long name with `_` for `-` (`--database-url` is
//! `database_url`). A key's value counts only where neither the flag nor its environment
//! variable is given: flag > environment > file > built-in default. The file's values become
//! the command's defaults, after the flag's own parser has checked them, so a wrong value is
//! reported with its key before anything starts. An unknown key is an error naming it.

use std::{
    collections::BTreeSet,
    ffi::OsString,
    path::{Path, PathBuf},
};

use clap::{parser::ValueSource, ArgMatches, Command};

/// Environment variable naming the configuration file.
pub const ENV: &str = "TESSERA_CONFIG";

/// The flag naming the configuration file.
pub const FLAG: &str = "config";

/// Why a configuration file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not TOML.
    #[error("{path}: not valid TOML: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message (line and column).
        message: String,
    },
    /// A key no flag of this binary has.
    #[error("{path}: unknown key `{key}` (keys are the flags' long names with `_` for `-`)")]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
    },
    /// A value the flag does not accept.
    #[error("{path}: `{key}`: {message}")]
    Value {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
        /// What the flag accepts.
        message: String,
    },
}

/// A parsed configuration file: each key with its value(s) as the flag would take them.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    path: PathBuf,
    values: Vec<(String, Vec<String>)>,
}

impl ConfigFile {
    /// Reads and parses `path` (values only; keys are checked by [`ConfigFile::apply`]).
    pub fn read(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Parses `text`, read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let table: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| ConfigError::Syntax {
                    path: path.to_path_buf(),
                    message: e.to_string().trim_end().replace('\n', " "),
                })?;
        let mut values = Vec::with_capacity(table.len());
        for (key, value) in table {
            let strings = flag_values(&value).ok_or_else(|| ConfigError::Value {
                path: path.to_path_buf(),
                key: key.clone(),
                message: "expected a string, number, boolean or a list of them".into(),
            })?;
            values.push((key, strings));
        }
        Ok(Self {
            path: path.to_path_buf(),
            values,
        })
    }

    /// `command` with this file's values as its flags' defaults (in every subcommand that has
    /// the flag); an error for a key no flag has or a value its flag refuses.
    pub fn apply(&self, command: Command) -> Result<Command, ConfigError> {
        let mut used = BTreeSet::new();
        let command = self.apply_to(command, &mut used)?;
        match self.values.iter().find(|(key, _)| !used.contains(key)) {
            Some((key, _)) => Err(ConfigError::UnknownKey {
                path: self.path.clone(),
                key: key.clone(),
            }),
            None => Ok(command),
        }
    }

    fn apply_to(
        &self,
        mut command: Command,
        used: &mut BTreeSet<String>,
    ) -> Result<Command, ConfigError> {
        for (key, values) in &self.values {
            let Some(arg) = command
                .get_arguments()
                .find(|a| a.get_long().is_some_and(|l| key_of(l) == *key) && configurable(a))
            else {
                continue;
            };
            for value in values {
                check_value(arg, value).map_err(|message| ConfigError::Value {
                    path: self.path.clone(),
                    key: key.clone(),
                    message,
                })?;
            }
            let id = arg.get_id().clone();
            let values = values.clone();
            command = command.mut_arg(id, move |a| a.default_values(values));
            used.insert(key.clone());
        }
        let names: Vec<String> = command
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .collect();
        for name in names {
            let mut failed = None;
            command = command.mut_subcommand(&name, |sub| match self.apply_to(sub.clone(), used) {
                Ok(sub) => sub,
                Err(e) => {
                    failed = Some(e);
                    sub
                }
            });
            if let Some(e) = failed {
                return Err(e);
            }
        }
        Ok(command)
    }
}

/// `--config FILE`: flattened into each binary's command line (for `--help` and the docs),
/// global to its subcommands. [`crate::parse_args`] reads the file, and takes the flag out of
/// the command line, before clap parses; see [`take_flag`].
#[derive(Debug, Clone, clap::Args)]
pub struct ConfigFlag {
    /// A TOML file whose keys (the flags' long names with `_` for `-`) set what neither a flag
    /// nor its environment variable sets (docs/operations.md, "The configuration file"). Also
    /// read from `TESSERA_CONFIG`.
    #[arg(long = "config", global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Why `config check` refused a file.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The file itself.
    #[error(transparent)]
    File(#[from] ConfigError),
    /// The flags and environment around it.
    #[error("{0}")]
    Flags(String),
}

/// `config check`: validates `path` against `command` and renders the effective settings of
/// its subcommand `scope` (the top level with `None`) as TOML, each line saying where its
/// value came from, secrets redacted (`reveal` may show a safe form of one).
pub fn check(
    command: Command,
    scope: Option<&str>,
    path: &Path,
    reveal: impl Fn(&str, &str) -> Option<String>,
) -> Result<String, CheckError> {
    let file = ConfigFile::read(path)?;
    let argv: Vec<OsString> = std::iter::once(command.get_name())
        .chain(scope)
        .map(OsString::from)
        .collect();
    let settings = settings(command, Some(&file), &argv, scope, reveal)?;
    Ok(format!(
        "# {}: valid. The effective settings of `{}` (flag > environment > file > default):\n{}",
        path.display(),
        argv.iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
        render(&settings)
    ))
}

/// `--check-config`: the effective settings of a whole command line `argv` with the file at
/// `path` (if any), rendered as [`check`] does.
pub fn effective_of_command_line(
    command: Command,
    argv: &[OsString],
    path: Option<&Path>,
    reveal: impl Fn(&str, &str) -> Option<String>,
) -> Result<String, CheckError> {
    let file = path.map(ConfigFile::read).transpose()?;
    let settings = settings(command, file.as_ref(), argv, None, reveal)?;
    let source = path.map_or_else(
        || "no configuration file".to_string(),
        |p| format!("{}: valid", p.display()),
    );
    Ok(format!(
        "# {source}. The effective settings (flag > environment > file > default):\n{}",
        render(&settings)
    ))
}

/// The effective settings of `command`, with `file` applied, parsing `argv`: those of its
/// subcommand `scope`, or of the top level.
fn settings(
    command: Command,
    file: Option<&ConfigFile>,
    argv: &[OsString],
    scope: Option<&str>,
    reveal: impl Fn(&str, &str) -> Option<String>,
) -> Result<Vec<Setting>, CheckError> {
    let command = match file {
        Some(file) => file.apply(command)?,
        None => command,
    };
    let matches = command
        .clone()
        .try_get_matches_from(argv)
        .map_err(|e| CheckError::Flags(first_line(&e.to_string())))?;
    let Some(sub) = scope else {
        return Ok(effective(&command, &matches, file, reveal));
    };
    match (
        command.find_subcommand(sub),
        matches.subcommand_matches(sub),
    ) {
        (Some(c), Some(m)) => Ok(effective(c, m, file, reveal)),
        _ => Err(CheckError::Flags(format!("no subcommand `{sub}`"))),
    }
}

/// The configuration file a command line names — `--config FILE` (or `--config=FILE`), else
/// `TESSERA_CONFIG` — and the command line without the flag: the file is read before clap
/// parses, and the flag before a subcommand would otherwise conflict with it.
pub fn take_flag(args: &[OsString]) -> (Option<PathBuf>, Vec<OsString>) {
    let flag = format!("--{FLAG}");
    let prefix = format!("--{FLAG}=");
    let mut named = None;
    let mut kept = Vec::with_capacity(args.len());
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let text = arg.to_string_lossy();
        if text == "--" {
            kept.push(arg.clone());
            kept.extend(iter.cloned());
            break;
        }
        if text == flag {
            let path = iter.next().map(PathBuf::from);
            named = named.or(path);
        } else if let Some(path) = text.strip_prefix(&prefix) {
            named = named.or(Some(PathBuf::from(path)));
        } else {
            kept.push(arg.clone());
        }
    }
    let named = named.or_else(|| {
        std::env::var_os(ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    (named, kept)
}

/// Runs `value` through `arg`'s own value parser, as if given on the command line.
fn check_value(arg: &clap::Arg, value: &str) -> Result<(), String> {
    let probe = clap::Arg::new("value")
        .long("value")
        .value_parser(arg.get_value_parser().clone())
        .action(clap::ArgAction::Set)
        .allow_hyphen_values(true);
    Command::new("config")
        .arg(probe)
        .try_get_matches_from(["config".to_string(), format!("--value={value}")])
        .map(|_| ())
        .map_err(|e| {
            first_line(&e.to_string())
                .replace("for '--value <value>'", "")
                .replace("  ", " ")
        })
}

/// The key of the flag `--long`.
pub fn key_of(long: &str) -> String {
    long.replace('-', "_")
}

/// Whether a flag takes a key: every flag but `--config` itself, `--help` and `--version`.
fn configurable(arg: &clap::Arg) -> bool {
    !matches!(arg.get_long(), Some(FLAG | "help" | "version"))
}

/// A TOML value as the strings a flag takes; `None` for tables and dates.
fn flag_values(value: &toml::Value) -> Option<Vec<String>> {
    match value {
        toml::Value::String(s) => Some(vec![s.clone()]),
        toml::Value::Integer(i) => Some(vec![i.to_string()]),
        toml::Value::Float(f) => Some(vec![f.to_string()]),
        toml::Value::Boolean(b) => Some(vec![b.to_string()]),
        toml::Value::Array(items) => items
            .iter()
            .map(|item| match item {
                toml::Value::Array(_) | toml::Value::Table(_) => None,
                other => flag_values(other).and_then(|mut v| v.pop()),
            })
            .collect(),
        toml::Value::Table(_) | toml::Value::Datetime(_) => None,
    }
}

fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or(message);
    line.trim_start_matches("error: ").to_string()
}

/// One line of `config check`: a key, its effective value (secrets redacted) and where the
/// value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The key.
    pub key: String,
    /// The value as TOML, or `"(redacted)"`; `None` when unset.
    pub value: Option<String>,
    /// `flag`, `environment`, `file` or `default`.
    pub source: &'static str,
}

/// The effective settings of `command`'s flags in `matches` (the subcommand's own matches),
/// every flag in order. A flag that hides its environment value (a secret) shows
/// `(redacted)`; `reveal` may show a safe form of one instead (a URL without its password).
pub fn effective(
    command: &Command,
    matches: &ArgMatches,
    file: Option<&ConfigFile>,
    reveal: impl Fn(&str, &str) -> Option<String>,
) -> Vec<Setting> {
    let from_file: BTreeSet<&str> = file
        .map(|f| f.values.iter().map(|(k, _)| k.as_str()).collect())
        .unwrap_or_default();
    let mut settings = Vec::new();
    for arg in command.get_arguments().filter(|a| configurable(a)) {
        let Some(long) = arg.get_long() else { continue };
        let key = key_of(long);
        let id = arg.get_id().as_str();
        let raw: Vec<String> = matches
            .get_raw(id)
            .map(|values| values.map(|v| v.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let source = match matches.value_source(id) {
            Some(ValueSource::CommandLine) => "flag",
            Some(ValueSource::EnvVariable) => "environment",
            Some(ValueSource::DefaultValue) if from_file.contains(key.as_str()) => "file",
            _ => "default",
        };
        let value = match raw.as_slice() {
            [] => None,
            _ if arg.is_hide_env_values_set() => Some(
                raw.first()
                    .and_then(|v| reveal(&key, v))
                    .map_or_else(|| "\"(redacted)\"".to_string(), |v| toml_string(&v)),
            ),
            [one] if !matches!(arg.get_action(), clap::ArgAction::Append) => Some(toml_scalar(one)),
            many => Some(format!(
                "[{}]",
                many.iter()
                    .map(|v| toml_scalar(v))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
        settings.push(Setting { key, value, source });
    }
    settings
}

/// `settings` as the lines of a TOML file, each followed by where its value came from; an
/// unset flag as a comment.
pub fn render(settings: &[Setting]) -> String {
    // Long values (a URL) push their own comment out rather than every line's.
    let width = settings
        .iter()
        .filter_map(|s| s.value.as_ref().map(|v| s.key.len() + v.len() + 3))
        .filter(|w| *w <= 48)
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for setting in settings {
        let line = match &setting.value {
            Some(value) => format!("{} = {value}", setting.key),
            None => format!("# {} (unset)", setting.key),
        };
        out.push_str(&format!("{line:<width$} # {}\n", setting.source));
    }
    out
}

/// A flag's value as TOML: numbers and booleans bare, everything else quoted.
fn toml_scalar(value: &str) -> String {
    let bare = value == "true"
        || value == "false"
        || value.parse::<i64>().is_ok()
        || (value.parse::<f64>().is_ok_and(f64::is_finite) && !value.contains(char::is_alphabetic));
    if bare {
        value.to_string()
    } else {
        toml_string(value)
    }
}

fn toml_string(value: &str) -> String {
    toml::Value::String(value.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        command: Sub,
    }

    #[derive(Debug, Subcommand)]
    enum Sub {
        Serve(Flags),
    }

    #[derive(Debug, Args)]
    struct Flags {
        #[arg(long, env = "T_CONFIG_TEST_LISTEN", default_value = "127.0.0.1:1")]
        listen: std::net::SocketAddr,
        #[arg(long, env = "T_CONFIG_TEST_SECRET_URL", hide_env_values = true)]
        secret_url: Option<String>,
        #[arg(long, env = "T_CONFIG_TEST_QUIET")]
        quiet: bool,
        #[arg(long, env = "T_CONFIG_TEST_PEERS", value_delimiter = ',')]
        peers: Vec<std::net::IpAddr>,
        #[arg(long, env = "T_CONFIG_TEST_WORKERS", default_value_t = 2)]
        workers: usize,
    }

    fn file(text: &str) -> ConfigFile {
        ConfigFile::parse(Path::new("t.toml"), text).expect("parses")
    }

    fn parse(text: &str, argv: &[&str]) -> Result<Flags, String> {
        let command = file(text)
            .apply(Cli::command())
            .map_err(|e| e.to_string())?;
        let matches = command
            .try_get_matches_from(argv)
            .map_err(|e| e.to_string())?;
        let Sub::Serve(flags) = Cli::from_arg_matches(&matches)
            .map_err(|e| e.to_string())?
            .command;
        Ok(flags)
    }

    const FILE: &str = "listen = \"127.0.0.1:9\"\nquiet = true\npeers = [\"10.0.0.1\", \"10.0.0.2\"]\nworkers = 7\nsecret_url = \"postgres://u:pw@h/d\"\n";

    #[test]
    fn the_file_fills_what_flags_leave_and_flags_win() {
        let flags = parse(FILE, &["t", "serve"]).expect("parses");
        assert_eq!(flags.listen.port(), 9);
        assert!(flags.quiet);
        assert_eq!(flags.peers.len(), 2);
        assert_eq!(flags.workers, 7);
        let flags = parse(FILE, &["t", "serve", "--workers", "3"]).expect("parses");
        assert_eq!(flags.workers, 3, "the flag wins over the file");
    }

    #[test]
    fn unknown_keys_and_bad_values_are_named() {
        let error = parse("listen = \"127.0.0.1:9\"\nlisten_adress = 1\n", &["t"]).expect_err("x");
        assert!(error.contains("unknown key `listen_adress`"), "{error}");
        let error = parse("workers = \"many\"\n", &["t"]).expect_err("value");
        assert!(error.contains("`workers`"), "{error}");
        let error = ConfigFile::parse(Path::new("t.toml"), "[serve]\nworkers = 1\n")
            .expect_err("table")
            .to_string();
        assert!(error.contains("`serve`"), "{error}");
        let error = ConfigFile::parse(Path::new("t.toml"), "workers = ").expect_err("syntax");
        assert!(error.to_string().contains("not valid TOML"), "{error}");
        let error = parse("config = \"other.toml\"\n", &["t"]).expect_err("config");
        assert!(error.contains("unknown key `config`"), "{error}");
    }

    #[test]
    fn the_effective_settings_say_where_each_came_from_and_hide_secrets() {
        let config = file(FILE);
        let command = config.apply(Cli::command()).expect("applies");
        let matches = command
            .clone()
            .try_get_matches_from(["t", "serve", "--workers", "3"])
            .expect("parses");
        let serve = command.find_subcommand("serve").expect("serve");
        let (_, sub) = matches.subcommand().expect("serve");
        let shown = |reveal: bool| {
            effective(serve, sub, Some(&config), |_, v| {
                reveal.then(|| v.replace("pw", "***"))
            })
        };
        let settings = shown(false);
        let find = |settings: &[Setting], key: &str| {
            settings.iter().find(|s| s.key == key).cloned().expect(key)
        };
        assert_eq!(find(&settings, "workers").value.as_deref(), Some("3"));
        assert_eq!(find(&settings, "workers").source, "flag");
        assert_eq!(find(&settings, "listen").source, "file");
        assert_eq!(
            find(&settings, "peers").value.as_deref(),
            Some("[\"10.0.0.1\", \"10.0.0.2\"]")
        );
        let secret = find(&settings, "secret_url");
        assert_eq!(secret.value.as_deref(), Some("\"(redacted)\""));
        let revealed = find(&shown(true), "secret_url");
        assert_eq!(revealed.value.as_deref(), Some("\"postgres://u:***@h/d\""));
    }

    #[test]
    fn the_file_is_named_by_flag_or_environment() {
        let argv = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        let named_in = |a: &[&str]| take_flag(&argv(a)).0;
        let without_flag = |a: &[&str]| take_flag(&argv(a)).1;
        assert_eq!(
            named_in(&["t", "serve", "--config", "a.toml"]),
            Some(PathBuf::from("a.toml"))
        );
        assert_eq!(
            named_in(&["t", "--config=b.toml"]),
            Some(PathBuf::from("b.toml"))
        );
        assert_eq!(
            without_flag(&[
                "t",
                "--config",
                "a.toml",
                "serve",
                "--config=b",
                "--",
                "--config"
            ]),
            argv(&["t", "serve", "--", "--config"])
        );
    }
}
