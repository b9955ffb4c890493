//! Which I/O thread the current code runs on: 0 on the thread that accepts (and on any
//! thread that is not an I/O thread), 1… on the others ([`crate::Server::io_threads`]).
//! What a connection's requests use per thread — the gateway's upstream connections — is
//! picked by it, so their I/O stays on the thread serving the connection.

use std::cell::Cell;

thread_local! {
    static INDEX: Cell<usize> = const { Cell::new(0) };
}

/// This thread's I/O thread index.
pub(crate) fn current() -> usize {
    INDEX.with(Cell::get)
}

/// Marks this thread as I/O thread `index`.
pub(crate) fn set(index: usize) {
    INDEX.with(|i| i.set(index));
}
