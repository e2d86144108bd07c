//! One module per subcommand group; each owns its clap arguments.

pub mod environments;
pub mod evidence;
pub mod inputs;
pub mod merge;
pub mod oracle;
pub mod perturb;
pub mod python_env;
pub mod run;
pub mod score;
pub mod stats;
pub mod study;
pub mod tools;
pub mod units;
pub mod validate;
