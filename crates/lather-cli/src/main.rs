//! The lather command.
fn main() {}
