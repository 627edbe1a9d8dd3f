//! The heap's segment memory: one `cuMemAlloc` (the default: fastest to create), or, for a
//! releasable heap, a reserved address range with one physical allocation mapped per 16 MiB
//! segment (CUDA's virtual memory management API), so that wholly free segments' memory can
//! go back to the driver and be mapped again later.

use cust::memory::DeviceBuffer;
use cust::sys as cu;
use veballoc_kernels::SEGMENT_BYTES;

use crate::error::{driver as check, Context, Result};

/// Where the segments live. Segment 0 is at a multiple of `SEGMENT_BYTES` in both.
pub(crate) enum Memory {
    /// One `cuMemAlloc`; segment 0 at `base`, within it.
    Buffer {
        buf: DeviceBuffer<u8>,
        base: u64,
    },
    Mapped(std::sync::Mutex<Mapped>),
}

/// The first multiple of `SEGMENT_BYTES` at or after `start`, if `capacity` bytes from there
/// fit in the `len` bytes from `start`.
fn aligned_within(start: u64, len: u64, capacity: u64) -> Option<u64> {
    let base = start.checked_next_multiple_of(SEGMENT_BYTES)?;
    (base.checked_add(capacity)? <= start.checked_add(len)?).then_some(base)
}

impl Memory {
    /// `capacity` bytes of segment memory from `cuMemAlloc`, segment 0 aligned to a segment
    /// (which the host pool and `DBox` alignment count on, and `cuMemAlloc` does not
    /// promise: on an H100, 17 and 24 MiB allocations came back 4 MiB past a 16 MiB
    /// boundary). Takes a segment more when the exact size comes back unaligned.
    pub fn buffer(capacity: u64) -> Result<Memory> {
        // SAFETY: the segment memory needs no initial contents.
        let buf =
            unsafe { DeviceBuffer::<u8>::uninitialized(capacity as usize) }.during("cuMemAlloc (heap)")?;
        let start = buf.as_device_ptr().as_raw();
        if let Some(base) = aligned_within(start, capacity, capacity) {
            return Ok(Memory::Buffer { buf, base });
        }
        drop(buf);
        let len = capacity + SEGMENT_BYTES;
        // SAFETY: as above.
        let buf = unsafe { DeviceBuffer::<u8>::uninitialized(len as usize) }.during("cuMemAlloc (heap)")?;
        let base = aligned_within(buf.as_device_ptr().as_raw(), len, capacity)
            .expect("a segment of slack holds an aligned start");
        Ok(Memory::Buffer { buf, base })
    }

    /// Address of segment 0.
    pub fn base(&self) -> u64 {
        match self {
            Memory::Buffer { base, .. } => *base,
            Memory::Mapped(m) => m.lock().unwrap_or_else(|e| e.into_inner()).base,
        }
    }
}

/// What `Heap::trim_memory` needs of a releasable heap's memory (a trait, so that a fake
/// that fails on demand can stand in for the driver in tests).
pub(crate) trait Unmap {
    /// Returns segment `seg`'s memory to the driver.
    fn unmap(&mut self, seg: u32) -> Result<()>;
    /// Whether segment `seg` has memory mapped.
    fn is_mapped(&self, seg: u32) -> bool;
}

/// Unmaps `segs`, which the kernels have just released (taken out of their segment tree).
/// On an error it stops, hands the listed segments that are still mapped back to the
/// kernels with `give_back` (a segment released but still mapped would be stranded: neither
/// the kernels nor `regrow_memory`, which maps unmapped ones, would use it again) and
/// returns the error (the unmap's, even when the give-back fails too). Returns how many
/// were unmapped.
pub(crate) fn unmap_released(
    mem: &mut dyn Unmap,
    segs: &[u32],
    give_back: impl FnOnce(&[u32]) -> Result<()>,
) -> Result<usize> {
    for (i, &seg) in segs.iter().enumerate() {
        if let Err(e) = mem.unmap(seg) {
            let still: Vec<u32> = segs[i..].iter().copied().filter(|&s| mem.is_mapped(s)).collect();
            if !still.is_empty() {
                let _ = give_back(&still);
            }
            return Err(e);
        }
    }
    Ok(segs.len())
}

/// A reserved range with a physical allocation per mapped segment.
pub(crate) struct Mapped {
    base: u64,
    device: i32,
    handles: Vec<Option<cu::CUmemGenericAllocationHandle>>,
}

impl Mapped {
    /// Reserves room for `segments` segments on `device` and maps every one.
    pub fn new(segments: u32, device: i32) -> Result<Mapped> {
        let mut base = 0;
        let bytes = segments as usize * SEGMENT_BYTES as usize;
        // SAFETY: reserving address space has no preconditions; the range is freed in Drop.
        let reserved = unsafe { cu::cuMemAddressReserve(&mut base, bytes, SEGMENT_BYTES as usize, 0, 0) };
        check(reserved, "cuMemAddressReserve")?;
        let mut m = Mapped { base, device, handles: vec![None; segments as usize] };
        for seg in 0..segments {
            m.map(seg)?;
        }
        Ok(m)
    }

    fn location(&self) -> cu::CUmemLocation {
        cu::CUmemLocation { type_: cu::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: self.device }
    }

    fn addr(&self, seg: u32) -> u64 {
        self.base + seg as u64 * SEGMENT_BYTES
    }

    /// Backs segment `seg` with fresh device memory (read-write for the device).
    pub fn map(&mut self, seg: u32) -> Result<()> {
        if self.handles[seg as usize].is_some() {
            return Ok(());
        }
        let prop = cu::CUmemAllocationProp {
            type_: cu::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
            requestedHandleTypes: cu::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
            location: self.location(),
            win32HandleMetaData: std::ptr::null_mut(),
            allocFlags: Default::default(),
        };
        let mut h = 0;
        // SAFETY: prop describes pinned device memory of a granularity-multiple size (16 MiB).
        check(unsafe { cu::cuMemCreate(&mut h, SEGMENT_BYTES as usize, &prop, 0) }, "cuMemCreate")?;
        // SAFETY: the target range lies in our reservation and is not mapped (handle None).
        let mapped = unsafe { cu::cuMemMap(self.addr(seg), SEGMENT_BYTES as usize, 0, h, 0) };
        if let Err(e) = check(mapped, "cuMemMap") {
            // SAFETY: h is ours and unmapped.
            unsafe { cu::cuMemRelease(h) };
            return Err(e);
        }
        self.handles[seg as usize] = Some(h);
        let access = cu::CUmemAccessDesc {
            location: self.location(),
            flags: cu::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: the range was just mapped.
        let granted = check(
            unsafe { cu::cuMemSetAccess(self.addr(seg), SEGMENT_BYTES as usize, &access, 1) },
            "cuMemSetAccess",
        );
        if granted.is_err() {
            // Mapped but not accessible, it would count as mapped and never be mapped again
            // (`regrow_memory` skips mapped segments): undo the map (no kernel can touch it
            // yet). An unmap that fails leaves it mapped and listed, and `release` then leaks
            // the range rather than free it under a mapping.
            let _ = self.unmap(seg);
        }
        granted
    }

    /// Returns segment `seg`'s memory to the driver (no kernel may touch it until `map`).
    /// When the unmap fails the segment stays mapped (and listed so); when only the release
    /// of the physical memory fails, the segment is unmapped.
    pub fn unmap(&mut self, seg: u32) -> Result<()> {
        let Some(h) = self.handles[seg as usize] else { return Ok(()) };
        // SAFETY: the range is mapped with h; the heap took the segment out of use.
        check(unsafe { cu::cuMemUnmap(self.addr(seg), SEGMENT_BYTES as usize) }, "cuMemUnmap")?;
        self.handles[seg as usize] = None;
        // SAFETY: h is no longer mapped.
        check(unsafe { cu::cuMemRelease(h) }, "cuMemRelease")
    }

    /// Segments whose memory is mapped.
    pub fn mapped(&self) -> usize {
        self.handles.iter().filter(|h| h.is_some()).count()
    }

    /// Segments whose memory was returned, lowest first.
    pub fn unmapped(&self) -> Vec<u32> {
        (0..self.handles.len() as u32).filter(|&s| self.handles[s as usize].is_none()).collect()
    }
}

impl Unmap for Mapped {
    fn unmap(&mut self, seg: u32) -> Result<()> {
        Mapped::unmap(self, seg)
    }

    fn is_mapped(&self, seg: u32) -> bool {
        self.handles[seg as usize].is_some()
    }
}

impl Mapped {
    /// Unmaps and releases every segment, then frees the reserved range, reporting the first
    /// error (`Heap::destroy`; a releasable heap's errors were dropped there). A segment whose
    /// unmap fails stays mapped, and then the range stays reserved: it is leaked rather than
    /// freed under a mapping. Runs once: Drop calls it too, and ignores what it reports.
    pub fn release(&mut self) -> Result<()> {
        if self.base == 0 {
            return Ok(());
        }
        let mut first = Ok(());
        for seg in 0..self.handles.len() as u32 {
            if let Err(e) = self.unmap(seg) {
                first = first.and(Err(e));
            }
        }
        if self.handles.iter().all(Option::is_none) {
            let bytes = self.handles.len() * SEGMENT_BYTES as usize;
            // SAFETY: every mapping in the range is gone; the reservation is ours, freed once
            // (base is cleared below).
            first = first.and(check(unsafe { cu::cuMemAddressFree(self.base, bytes) }, "cuMemAddressFree"));
        }
        self.base = 0;
        first
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    /// Issue 10 item 9: segment 0 at a multiple of a segment, inside the allocation.
    #[test]
    fn aligned_within_finds_an_aligned_start_or_none() {
        let seg = SEGMENT_BYTES;
        assert_eq!(aligned_within(5 * seg, 2 * seg, 2 * seg), Some(5 * seg), "already aligned");
        let off = 5 * seg + (4 << 20);
        assert_eq!(aligned_within(off, 2 * seg, 2 * seg), None, "no room to align");
        assert_eq!(aligned_within(off, 3 * seg, 2 * seg), Some(6 * seg));
        assert_eq!(aligned_within(u64::MAX - 10, 5, 1), None, "no overflow");
    }

    /// Segment memory whose unmap fails on demand: at `fail_at` either leaving the segment
    /// mapped (the unmap failed) or not (only the release of its memory failed).
    struct FakeMemory {
        mapped: Vec<bool>,
        fail_at: Option<u32>,
        unmapped_anyway: bool,
    }

    impl Unmap for FakeMemory {
        fn unmap(&mut self, seg: u32) -> Result<()> {
            if self.fail_at == Some(seg) {
                self.mapped[seg as usize] = !self.unmapped_anyway;
                return Err(Error::Driver { call: "cuMemUnmap", code: 999 });
            }
            self.mapped[seg as usize] = false;
            Ok(())
        }
        fn is_mapped(&self, seg: u32) -> bool {
            self.mapped[seg as usize]
        }
    }

    /// Issue 10 item 12: an unmap error in `trim_memory` strands no segment: the listed
    /// segments still mapped go back to the kernels (they used to stay released but mapped,
    /// used by no one), the unmapped ones stay unmapped for `regrow_memory`.
    #[test]
    fn an_unmap_error_gives_the_still_mapped_segments_back() {
        let released = [7, 6, 5, 4];
        for unmapped_anyway in [false, true] {
            let mut mem = FakeMemory { mapped: vec![true; 8], fail_at: Some(5), unmapped_anyway };
            let mut given = Vec::new();
            let r = unmap_released(&mut mem, &released, |s| {
                given.extend_from_slice(s);
                Ok(())
            });
            assert!(matches!(r, Err(Error::Driver { call: "cuMemUnmap", .. })));
            let expect: &[u32] = if unmapped_anyway { &[4] } else { &[5, 4] };
            assert_eq!(given, expect, "every listed segment still mapped, and only those");
            assert_eq!(mem.mapped, [true, true, true, true, true, !unmapped_anyway, false, false]);
        }
        let mut mem = FakeMemory { mapped: vec![true; 8], fail_at: None, unmapped_anyway: false };
        let n = unmap_released(&mut mem, &released, |_| panic!("nothing to give back")).unwrap();
        assert_eq!(n, 4);
        assert_eq!(mem.mapped, [true, true, true, true, false, false, false, false]);
    }
}
