//! Integration tests: the real binary against temporary repositories.

mod assets;
mod bind;
mod branch;
mod capture;
mod completion;
mod crash;
mod discard_list;
mod escape;
mod fixture;
mod help;
mod house;
mod human;
mod json;
mod promote;
mod pty;
mod races;
mod racy;
mod run;
mod sandbox;
mod scripts;
mod shapes;
mod state_machine;
mod sweep;
mod term;
mod trust;
