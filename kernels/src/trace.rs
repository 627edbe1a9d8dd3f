//! Optional profile of the install path (cargo feature `trace`, off in every normal build):
//! event counts and nanoseconds summed into spare words at the end of the metadata header,
//! which `veballoc::Heap::trace` reads back. Without the feature every call compiles to
//! nothing. Meant for A/B runs on the GPU (`scripts/ptx-variant.sh trace`), not for users.

use crate::atomic::words;

/// The events, in header-word order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Event {
    /// Blocks installed in a current slot (`install_next` calls).
    Installs,
    /// Nanoseconds from the start of `install_next` to the slot swap, summed.
    InstallNs,
    /// Nanoseconds in `claim_blocks` inside `install_next`, summed.
    ClaimNs,
    /// Segments formatted.
    Formats,
    /// Times a claimer entered the format semaphore.
    FormatEntries,
    /// Sleeps in `claim_blocks` (waiting for a formatter).
    ClaimSleeps,
    /// Sleeps in `take_in_row` (waiting for an installer), of takes that then succeeded.
    TakeSleeps,
    /// Slot adds that found the block used up (`SlotTake::Full`), of takes that then succeeded.
    TakeFull,
    /// Installs that took at most 2 us / 8 us / 32 us / 128 us / longer (a histogram).
    InstallUpTo2us,
    InstallUpTo8us,
    InstallUpTo32us,
    InstallUpTo128us,
    InstallLonger,
    /// Nanoseconds from a `Full` or unelected `Empty` take to the next fresh take of the same
    /// warp, summed (the waiters' side of an install).
    WaitNs,
    /// Waits counted in `WaitNs`.
    Waits,
    /// Nanoseconds in `claim_from_tree` inside `claim_blocks`, summed, and its failures.
    TreeNs,
    TreeMisses,
    /// Nanoseconds formatting segments (claim of the segment included), summed.
    FormatNs,
    /// Blocks recycled by the free that completed them, and nanoseconds doing it (the
    /// segment's pending mark included), summed.
    Recycles,
    RecycleNs,
    /// Segment reclaims tried (by the sweep, by `trim`, by a claim of a run of segments that
    /// drains the pending ones).
    Reclaims,
    /// Bounded waits that ran out of time, by where: a claim waiting for a format
    /// (`claim_blocks`), a run of whole blocks or fresh segments (`claim_run_exact`,
    /// `fresh_segment`, `fresh_run`), a taker waiting for its slot's installer, a failing request waiting
    /// for a reclaim sweep. Each can turn into a null that does not mean "full".
    TimeoutFormat,
    TimeoutRun,
    TimeoutInstall,
    TimeoutSweep,
    /// Reclaim sweeps run (`DeviceHeap::reclaim_before_null`).
    Sweeps,
    /// Requests that got null, by path: slices, runs of whole blocks (any size above the
    /// slices', up to the heap).
    NullSlice,
    NullWhole,
    /// Segments marked for reclaim by their last block's release.
    Pending,
    /// Claims' `fetch_and`s on a block tree's leaf word that took none of the bits they
    /// picked (racers took them first): each costs the claimer another round trip.
    ClaimLost,
}

/// Number of events.
pub const EVENTS: usize = Event::ClaimLost as usize + 1;
/// Names of the events, for printing.
pub const NAMES: [&str; EVENTS] = [
    "installs",
    "install_ns",
    "claim_ns",
    "formats",
    "format_entries",
    "claim_sleeps",
    "take_sleeps",
    "take_full",
    "install<=2us",
    "install<=8us",
    "install<=32us",
    "install<=128us",
    "install>128us",
    "wait_ns",
    "waits",
    "tree_ns",
    "tree_misses",
    "format_ns",
    "recycles",
    "recycle_ns",
    "reclaims",
    "timeout_format",
    "timeout_run",
    "timeout_install",
    "timeout_sweep",
    "sweeps",
    "null_slice",
    "null_whole",
    "pending",
    "claim_lost",
];
/// Byte offset of the trace words in the metadata header (its last `EVENTS` words).
pub const TRACE_OFF: u64 = crate::layout::HEADER_BYTES - EVENTS as u64 * 8;
const _: () = assert!(core::mem::size_of::<crate::layout::HeapLayout>() as u64 <= TRACE_OFF);

/// Whether this build traces.
pub const ON: bool = cfg!(feature = "trace");

/// The GPU clock where tracing, else 0 (no clock read).
#[inline(always)]
pub fn now() -> u64 {
    if ON {
        crate::arch::globaltimer()
    } else {
        0
    }
}

/// Adds `v` to event `e` of the heap whose metadata is at `meta`. Crate-private: it writes at
/// `meta + TRACE_OFF` unchecked, so `meta` must be a live heap's metadata (the layers pass
/// their own).
#[inline(always)]
pub(crate) fn add(meta: u64, e: Event, v: u64) {
    if ON {
        // SAFETY: the header holds HEADER_BYTES bytes, of which the layout uses less than
        // TRACE_OFF (asserted above); the trace words are the rest.
        let w = unsafe { words(meta + TRACE_OFF, EVENTS) };
        // Relaxed: a statistic, read by the host after the kernel.
        w[e as usize].fetch_add_relaxed(v);
    }
}

/// The counter of event `e` of the heap whose metadata is at `meta` (trace builds), for a
/// layer that counts without the metadata's address (`Veb::with_lost_counter`). Crate-private
/// as `add` is: `meta` must be a live heap's metadata, for as long as the reference is used
/// (the layers pass their own, for their views' life).
#[cfg(feature = "trace")]
pub(crate) fn word<'a>(meta: u64, e: Event) -> &'a crate::atomic::Atom64 {
    // SAFETY: as in `add`: the trace words are the header's last EVENTS words, which live as
    // long as the heap's metadata, for which the layers hold their views.
    let w = unsafe { words(meta + TRACE_OFF, EVENTS) };
    &w[e as usize]
}

/// Adds the nanoseconds since `t0` (a `now()`) to event `e`.
#[inline(always)]
pub(crate) fn add_since(meta: u64, e: Event, t0: u64) {
    add(meta, e, now().wrapping_sub(t0));
}

/// Records an install of `ns` nanoseconds (its sum, count and histogram bucket).
#[inline(always)]
pub(crate) fn install(meta: u64, ns: u64) {
    if ON {
        add(meta, Event::Installs, 1);
        add(meta, Event::InstallNs, ns);
        let bucket = match ns {
            0..=2_000 => Event::InstallUpTo2us,
            2_001..=8_000 => Event::InstallUpTo8us,
            8_001..=32_000 => Event::InstallUpTo32us,
            32_001..=128_000 => Event::InstallUpTo128us,
            _ => Event::InstallLonger,
        };
        add(meta, bucket, 1);
    }
}
