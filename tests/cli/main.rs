//! Integration tests: the real binary against temporary repositories.

mod bind;
mod discard_list;
mod fixture;
mod help;
