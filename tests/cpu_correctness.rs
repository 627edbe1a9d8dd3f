//! Defects found by review (issue 10), each shown on the CPU model of the allocator, in the
//! configuration the benchmarks use: heaps without the hand-out bitmap (`with_checks(.., false)`).

use veballoc::kernels::cpu::CpuHeap;
use veballoc::kernels::heap::counter;
use veballoc::kernels::{DeviceHeap, Stats};

fn stats(h: &DeviceHeap) -> Stats {
    h.validate().unwrap_or_else(|e| panic!("heap inconsistent: {e:?}"))
}

/// Issue 10.4: a second free of a whole block, without the checks, must be counted and
/// ignored. It used to take the slice path (the first free had set the kind to "slices") and
/// give back a slice of a parked block, so that the validator failed and a later whole-block
/// malloc could return memory a user still held.
#[test]
fn whole_block_double_free_without_checks_is_counted_and_harmless() {
    let cpu = CpuHeap::with_checks(4, 1, false);
    let h = cpu.heap();
    assert!(!h.checking());
    let keep = h.malloc(8192); // keeps the segment formatted for the class
    let p = h.malloc(8192);
    assert!(!p.is_null() && !keep.is_null());
    h.free(p);
    h.free(p);
    assert_eq!(h.counter(counter::DOUBLE_FREE).load_acquire(), 1, "the second free is counted");
    assert_eq!(stats(h).bytes_in_use, h.usable_size(keep));
    // Every later whole block is distinct from the live one and from each other.
    let mut got = vec![keep as u64];
    for _ in 0..300 {
        let q = h.malloc(8192);
        if q.is_null() {
            break;
        }
        got.push(q as u64);
    }
    let n = got.len();
    got.sort();
    got.dedup();
    assert_eq!(got.len(), n, "a block was handed out twice");
    assert_eq!(stats(h).bytes_in_use, n as u64 * h.usable_size(keep));
}

/// Issue 10.4, the same for a whole block whose slices were handed out before: a double free
/// of a block-aligned pointer into a parked block (every slice given back) is counted.
#[test]
fn free_into_a_parked_block_without_checks_is_counted() {
    let cpu = CpuHeap::with_checks(4, 1, false);
    let h = cpu.heap();
    let keep = h.malloc(8192);
    let p = h.malloc(8192);
    h.free(p);
    // SAFETY: pointer arithmetic only; the heap never dereferences it.
    let inside = unsafe { p.add(4096) };
    h.free(inside); // a slice-aligned pointer into the parked block
    let bad =
        h.counter(counter::DOUBLE_FREE).load_acquire() + h.counter(counter::INVALID_FREE).load_acquire();
    assert_eq!(bad, 1, "a free into a parked block is counted");
    assert_eq!(stats(h).bytes_in_use, h.usable_size(keep));
    h.free(keep);
}

/// The stamp kernel that names an allocator build's checks, in veballoc's PTX and swapped.
fn stamps() -> (&'static str, &'static str) {
    use veballoc::kernels::{STAMP_WITHOUT_CHECKS, STAMP_WITH_CHECKS};
    if veballoc::PTX_HAS_CHECKS {
        (STAMP_WITH_CHECKS, STAMP_WITHOUT_CHECKS)
    } else {
        (STAMP_WITHOUT_CHECKS, STAMP_WITH_CHECKS)
    }
}

/// Issue 10.6: every PTX build of the allocator says whether it keeps the checks' bitmap, and
/// a module built the other way than veballoc's PTX is refused with a clear error.
#[test]
fn modules_built_with_other_checks_are_refused() {
    let (ours, other) = stamps();
    assert_eq!(
        veballoc::ptx_checks(veballoc::PTX),
        Some(veballoc::PTX_HAS_CHECKS),
        "veballoc's PTX is stamped"
    );
    assert!(veballoc::check_layout_stamp(veballoc::PTX, veballoc::PTX_HAS_CHECKS).is_ok());
    let swapped = veballoc::PTX.replace(ours, other);
    let err = veballoc::check_layout_stamp(&swapped, veballoc::PTX_HAS_CHECKS).unwrap_err();
    assert!(matches!(err, veballoc::Error::ChecksMismatch { .. }), "{err}");
    assert!(err.to_string().contains("safety checks"), "{err}");
    // A module without the allocator has no stamp and is accepted.
    assert_eq!(veballoc::ptx_checks(".version 7.0\n.target sm_80\n"), None);
}
