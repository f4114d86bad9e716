//! SQLite's own allocations, handed to mimalloc.
//!
//! The bundled SQLite allocates with the C library's `malloc`. The driver copies every
//! column of every row it reads on its worker thread, and the row is freed later on a
//! tokio thread; glibc's arenas serialise such cross-thread frees behind a lock and
//! spend the rest consolidating free lists. A profile of the API's monitor list at
//! 100,000 monitors put glibc's allocator at about a seventh of all samples
//! (docs/performance.md). mimalloc, already the process's Rust allocator, frees across
//! threads without a lock.
//!
//! SQLite takes its allocator once, before its first connection: [`install`] runs
//! before the store opens one, and does nothing if SQLite was started already (a test
//! process that opened a database some other way keeps SQLite's default allocator).

#![allow(unsafe_code)]

use libsqlite3_sys as ffi;
use std::ffi::{c_int, c_void};
use std::sync::Once;

/// Use mimalloc for every allocation SQLite makes from now on (the first call only).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(x_malloc),
            xFree: Some(x_free),
            xRealloc: Some(x_realloc),
            xSize: Some(x_size),
            xRoundup: Some(x_roundup),
            xInit: Some(x_init),
            xShutdown: Some(x_shutdown),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: SQLITE_CONFIG_MALLOC copies the `sqlite3_mem_methods` it is pointed at
        // (so a local will do); the functions below follow its contract (8-byte aligned blocks,
        // `xSize` of a block it was given, `xRealloc` keeping the contents). SQLite
        // refuses the call with SQLITE_MISUSE once it is initialised, which is harmless.
        let rc = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &raw const methods) };
        if rc != ffi::SQLITE_OK {
            tracing::debug!(
                code = rc,
                "SQLite was started before its allocator could be set; it keeps malloc"
            );
        }
    });
}

fn size_of_request(n: c_int) -> usize {
    usize::try_from(n).unwrap_or(0)
}

unsafe extern "C" fn x_malloc(n: c_int) -> *mut c_void {
    // SAFETY: mi_malloc takes any size and returns null when it cannot allocate, as
    // SQLite expects of xMalloc; its blocks are 16-byte aligned.
    unsafe { libmimalloc_sys::mi_malloc(size_of_request(n)) }
}

unsafe extern "C" fn x_free(p: *mut c_void) {
    // SAFETY: `p` is null or a block from x_malloc/x_realloc, as SQLite promises.
    unsafe { libmimalloc_sys::mi_free(p) }
}

unsafe extern "C" fn x_realloc(p: *mut c_void, n: c_int) -> *mut c_void {
    // SAFETY: `p` is a block from x_malloc/x_realloc; mi_realloc keeps its contents.
    unsafe { libmimalloc_sys::mi_realloc(p, size_of_request(n)) }
}

unsafe extern "C" fn x_size(p: *mut c_void) -> c_int {
    // SAFETY: `p` is a live block from x_malloc/x_realloc.
    let n = unsafe { libmimalloc_sys::mi_usable_size(p) };
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

extern "C" fn x_roundup(n: c_int) -> c_int {
    // Blocks come in multiples of 8 bytes; SQLite never asks near c_int::MAX.
    n.saturating_add(7) & !7
}

extern "C" fn x_init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

extern "C" fn x_shutdown(_: *mut c_void) {}

#[cfg(test)]
mod tests {
    #[test]
    fn rounds_requests_up_to_eight_bytes() {
        assert_eq!(super::x_roundup(1), 8);
        assert_eq!(super::x_roundup(8), 8);
        assert_eq!(super::x_roundup(9), 16);
        assert_eq!(super::x_roundup(0), 0);
    }
}
