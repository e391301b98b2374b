//! Each verb's request, declared once: the command line parses it, the MCP tools derive from it.
//! May call: base, git, store, context, model, recovery, services, ops, flows.
//!
//! A verb's request type carries each option's help, default, conflicts and requirements.
//! [`Request::NOT_FOR_AGENTS`] names the options an agent may not set; everything else is a
//! parameter of the verb's MCP tool, named as its clap id (`allow_network`), except `session`,
//! which agents know as `session_id`. An agent's arguments are checked by clap itself: they are
//! turned into the command line they stand for and parsed as the command line is.

pub mod agent;
pub mod bind;
pub mod capture;
pub mod diff;
pub mod discard;
pub mod doc;
pub mod land;
pub mod list;
pub mod overlaps;
pub mod promote;
pub mod run;
pub mod show;
#[cfg(test)]
mod tests;
pub mod verb;

pub use agent::{
    Kind, Param, agent_flag, agent_name, agent_params, agent_sentence, agent_text, command,
    given_at_all, parse_agent,
};
pub use verb::{AgentOnly, Request, SessionArg, parse_bytes, parse_duration};
