//! The heap's segment memory: one `cuMemAlloc` (the default: fastest to create), or, for a
//! releasable heap, a reserved address range with one physical allocation mapped per 16 MiB
//! segment (CUDA's virtual memory management API), so that wholly free segments' memory can
//! go back to the driver and be mapped again later.

use cust::memory::DeviceBuffer;
use cust::sys as cu;
use veballoc_kernels::SEGMENT_BYTES;

use crate::error::{Error, Result};

/// Where the segments live.
pub(crate) enum Memory {
    Buffer(DeviceBuffer<u8>),
    Mapped(std::sync::Mutex<Mapped>),
}

impl Memory {
    /// Address of segment 0.
    pub fn base(&self) -> u64 {
        match self {
            Memory::Buffer(b) => b.as_device_ptr().as_raw(),
            Memory::Mapped(m) => m.lock().unwrap_or_else(|e| e.into_inner()).base,
        }
    }
}

/// A reserved range with a physical allocation per mapped segment.
pub(crate) struct Mapped {
    base: u64,
    device: i32,
    handles: Vec<Option<cu::CUmemGenericAllocationHandle>>,
}

fn check(r: cu::CUresult, call: &'static str) -> Result<()> {
    if r == cu::cudaError_enum::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Driver { call, code: r as i32 })
    }
}

impl Mapped {
    /// Reserves room for `segments` segments on `device` and maps every one.
    pub fn new(segments: u32, device: i32) -> Result<Mapped> {
        let mut base = 0;
        let bytes = segments as usize * SEGMENT_BYTES as usize;
        // SAFETY: reserving address space has no preconditions; the range is freed in Drop.
        check(
            unsafe { cu::cuMemAddressReserve(&mut base, bytes, SEGMENT_BYTES as usize, 0, 0) },
            "cuMemAddressReserve",
        )?;
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
        if let Err(e) =
            check(unsafe { cu::cuMemMap(self.addr(seg), SEGMENT_BYTES as usize, 0, h, 0) }, "cuMemMap")
        {
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
        check(
            unsafe { cu::cuMemSetAccess(self.addr(seg), SEGMENT_BYTES as usize, &access, 1) },
            "cuMemSetAccess",
        )
    }

    /// Returns segment `seg`'s memory to the driver (no kernel may touch it until `map`).
    pub fn unmap(&mut self, seg: u32) -> Result<()> {
        if let Some(h) = self.handles[seg as usize].take() {
            // SAFETY: the range is mapped with h; the heap took the segment out of use.
            check(unsafe { cu::cuMemUnmap(self.addr(seg), SEGMENT_BYTES as usize) }, "cuMemUnmap")?;
            // SAFETY: h is no longer mapped.
            check(unsafe { cu::cuMemRelease(h) }, "cuMemRelease")?;
        }
        Ok(())
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

impl Drop for Mapped {
    fn drop(&mut self) {
        for seg in 0..self.handles.len() as u32 {
            let _ = self.unmap(seg);
        }
        // SAFETY: every mapping in the range is gone; the reservation is ours.
        unsafe { cu::cuMemAddressFree(self.base, self.handles.len() * SEGMENT_BYTES as usize) };
    }
}
