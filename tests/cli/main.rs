//! Integration tests: the real binary against temporary repositories.

mod bind;
mod capture;
mod discard_list;
mod fixture;
mod help;
