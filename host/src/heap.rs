//! Creating, inspecting and destroying a heap on the GPU.

use std::sync::{Mutex, MutexGuard, OnceLock};

use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy};
use cust::stream::Stream;
use veballoc_kernels::heap::{DeviceHeap, HeapLayout, DEFAULT_SHARDS};
use veballoc_kernels::{Stats, SEGMENT_BYTES};

use crate::error::{Context, Error, Result};
use crate::gpu::Gpu;
use crate::memory::{Mapped, Memory};
use crate::pool::{Pool, PoolStats, SegmentSource, DEFAULT_RELEASE_THRESHOLD};

/// Threads per block for veballoc's own maintenance kernels.
const MAINT_BLOCK: u32 = 256;
/// Device memory `Heap::auto` leaves to other users of the card.
pub const AUTO_RESERVE_BYTES: u64 = 512 << 20;
/// Sizes `Heap::auto` tries, each a tenth smaller than the last.
const AUTO_TRIES: u32 = 20;

/// The device handle as a kernel argument: pass `heap.arg()` where the kernel takes a
/// `veballoc_kernels::DeviceHeap` by value.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct HeapArg(pub DeviceHeap);

// SAFETY: DeviceHeap is plain old data (addresses, counts and offsets), valid to copy to the GPU.
unsafe impl DeviceCopy for HeapArg {}

/// A heap in GPU memory that kernels allocate from with `DeviceHeap::malloc`/`free`.
///
/// ```no_run
/// use veballoc::{Gpu, Heap};
/// let gpu = Gpu::new()?;
/// let heap = Heap::new(&gpu, 8 << 30)?;        // 8 GiB, ready to allocate
/// let arg = heap.arg();                         // pass to your kernel by value
/// // ... launch kernels that call arg.0.malloc(n) / free(p) ...
/// let stats = heap.stats()?;                    // walks and validates the metadata
/// println!("{} bytes in use", stats.bytes_in_use);
/// # Ok::<(), veballoc::Error>(())
/// ```
pub struct Heap {
    // Before `gpu`: the pool's pending events belong to its context.
    pool: Mutex<Pool>,
    gpu: Gpu,
    // Dropped (freed) before `gpu`, whose context they belong to.
    mem: Option<Memory>,
    meta: Option<DeviceBuffer<u64>>,
    handle: DeviceHeap,
    layout: HeapLayout,
}

impl Heap {
    /// Creates a heap of `bytes` (rounded down to whole 16 MiB segments) and initializes it.
    pub fn new(gpu: &Gpu, bytes: u64) -> Result<Heap> {
        Self::with_shards(gpu, bytes, DEFAULT_SHARDS)
    }

    /// As [`Heap::new`], with `shards` current-block slots per size class.
    pub fn with_shards(gpu: &Gpu, bytes: u64, shards: u32) -> Result<Heap> {
        Self::create(gpu, bytes, shards, false)
    }

    /// A heap whose wholly free segments' memory can go back to the driver
    /// ([`Heap::trim_memory`]) and be mapped again ([`Heap::regrow_memory`]): its segments
    /// are mapped one by one into a reserved address range (CUDA's virtual memory
    /// management), which makes it slower to create than [`Heap::new`].
    ///
    /// ```no_run
    /// # let gpu = veballoc::Gpu::new()?;
    /// let heap = veballoc::Heap::releasable(&gpu, 8 << 30)?;
    /// // ... a phase that needed 8 GiB ...
    /// let returned = heap.trim_memory(1 << 30)?;   // keep 1 GiB of free segments mapped
    /// // ... later, before a big phase:
    /// heap.regrow_memory(returned)?;
    /// # Ok::<(), veballoc::Error>(())
    /// ```
    pub fn releasable(gpu: &Gpu, bytes: u64) -> Result<Heap> {
        Self::create(gpu, bytes, DEFAULT_SHARDS, true)
    }

    fn create(gpu: &Gpu, bytes: u64, shards: u32, releasable: bool) -> Result<Heap> {
        if bytes < SEGMENT_BYTES {
            return Err(Error::HeapTooSmall { requested: bytes, minimum: SEGMENT_BYTES });
        }
        let segments = HeapLayout::segments_for_bytes(bytes);
        let layout = HeapLayout::new(segments, shards.max(1), gpu.checks());
        let capacity = (segments as u64) * SEGMENT_BYTES;
        let available = gpu.free_memory()?;
        if capacity + layout.meta_bytes > available {
            return Err(Error::HeapTooLarge { requested: capacity + layout.meta_bytes, available });
        }
        let mem = if releasable {
            Memory::Mapped(Mutex::new(Mapped::new(segments, 0)?))
        } else {
            // SAFETY: the segment memory needs no initial contents.
            Memory::Buffer(
                unsafe { DeviceBuffer::<u8>::uninitialized(capacity as usize) }
                    .during("cuMemAlloc (heap)")?,
            )
        };
        let meta =
            DeviceBuffer::<u64>::zeroed((layout.meta_bytes / 8) as usize).during("cuMemAlloc (metadata)")?;
        let handle = DeviceHeap { mem: mem.base(), meta: meta.as_device_ptr().as_raw() };
        let header = layout.header_words();
        let mut first = meta.index(..header.len());
        first.copy_from(&header[..]).during("cuMemcpyHtoD (layout header)")?;
        let heap = Heap {
            pool: Mutex::new(Pool::with_threshold(DEFAULT_RELEASE_THRESHOLD)),
            gpu: gpu.clone(),
            mem: Some(mem),
            meta: Some(meta),
            handle,
            layout,
        };
        let arg = heap.arg();
        // SAFETY: veballoc_init takes one DeviceHeap.
        unsafe {
            gpu.launch("veballoc_init", layout.init_words() as u64, MAINT_BLOCK, crate::kernel_args![arg])?
        };
        gpu.sync()?;
        Ok(heap)
    }

    /// The largest heap the GPU's free memory allows (less `AUTO_RESERVE_BYTES` for other
    /// users of the card), backing off by a tenth whenever the allocation fails.
    pub fn auto(gpu: &Gpu) -> Result<Heap> {
        let free = gpu.free_memory()?;
        // Metadata is about 2.5% of the heap with checks, 1.6% without.
        let mut bytes = free.saturating_sub(AUTO_RESERVE_BYTES) / 1025 * 1000;
        let mut last = None;
        for _ in 0..AUTO_TRIES {
            if bytes < SEGMENT_BYTES {
                break;
            }
            match Self::new(gpu, bytes) {
                Ok(h) => return Ok(h),
                Err(e @ (Error::HeapTooLarge { .. } | Error::Cuda { .. })) => last = Some(e),
                Err(e) => return Err(e),
            }
            bytes = bytes / 10 * 9;
        }
        Err(last.unwrap_or(Error::HeapTooSmall { requested: bytes, minimum: SEGMENT_BYTES }))
    }

    /// The handle kernels receive (a `Copy` value).
    pub fn handle(&self) -> DeviceHeap {
        self.handle
    }

    /// The handle wrapped for `cust::launch!`.
    pub fn arg(&self) -> HeapArg {
        HeapArg(self.handle)
    }

    /// Where the heap's metadata parts live.
    pub fn layout(&self) -> &HeapLayout {
        &self.layout
    }

    /// Bytes of segment memory the heap manages.
    pub fn capacity(&self) -> u64 {
        (self.layout.num_segments as u64) * SEGMENT_BYTES
    }

    /// The GPU the heap lives on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Retires the per-multiprocessor current blocks so that fully freed blocks and segments
    /// go back to their trees (run between phases; allocation may continue afterwards), and
    /// returns the host pool's wholly free segments to the device heap.
    pub fn trim(&self) -> Result<()> {
        self.pool().trim(&Segments(self))?;
        let arg = self.arg();
        let slots = veballoc_kernels::slice::SLOT_ROWS as u64 * self.layout.shards as u64;
        // SAFETY: both kernels take one DeviceHeap; the stream orders them.
        unsafe {
            self.gpu.launch("veballoc_trim", slots, MAINT_BLOCK, crate::kernel_args![arg])?;
            self.gpu.launch(
                "veballoc_trim_segments",
                self.layout.num_segments as u64,
                MAINT_BLOCK,
                crate::kernel_args![arg],
            )?;
        }
        self.gpu.sync()
    }

    fn pool(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates `bytes` of device memory from this heap, from the host: 256-byte aligned,
    /// best fit in segments the host pool takes from the heap (one kernel launch when it
    /// grows), or a run of whole segments above 4 MiB. Errors: `ZeroSizedAlloc`,
    /// `OutOfMemory`. Free it with [`Heap::free`], not from a kernel.
    ///
    /// ```no_run
    /// # let gpu = veballoc::Gpu::new()?;
    /// let heap = veballoc::Heap::new(&gpu, 1 << 30)?;
    /// let buf = heap.alloc(1 << 20)?;          // a device address
    /// heap.write(buf, &[1u32, 2, 3])?;          // typed host views
    /// let back: [u32; 3] = heap.read(buf)?;
    /// heap.free(buf)?;
    /// # Ok::<(), veballoc::Error>(())
    /// ```
    pub fn alloc(&self, bytes: u64) -> Result<u64> {
        self.pool().alloc(&Segments(self), bytes, None)
    }

    /// Frees a host allocation now: no queued or running kernel may still use it (use
    /// [`Heap::free_async`] otherwise).
    pub fn free(&self, ptr: u64) -> Result<()> {
        self.pool().free(&Segments(self), ptr, None)
    }

    /// Stream-ordered allocation: the memory is usable by work queued on `stream` after this
    /// call (and at once by the host). It may reuse memory freed on the same stream with
    /// [`Heap::free_async`] before that free has run, as stream order makes that safe;
    /// errors (out of memory) come back from this call, not from a later sync.
    pub fn alloc_async(&self, bytes: u64, stream: &Stream) -> Result<u64> {
        self.pool().alloc(&Segments(self), bytes, Some(stream.as_inner() as usize))
    }

    /// Stream-ordered free: the memory goes back once the work queued on `stream` so far has
    /// run (at once for later work on the same stream).
    pub fn free_async(&self, ptr: u64, stream: &Stream) -> Result<()> {
        self.pool().free(&Segments(self), ptr, Some(stream))
    }

    /// Bytes of wholly free pool segments the host pool keeps for reuse instead of returning
    /// them to the device heap (default `DEFAULT_RELEASE_THRESHOLD`, 64 MiB; 0 returns them
    /// at once). `trim` returns them regardless.
    pub fn set_release_threshold(&self, bytes: u64) {
        self.pool().release_threshold = bytes;
    }

    /// Bytes usable at a live host allocation.
    pub fn alloc_size(&self, ptr: u64) -> Option<u64> {
        self.pool().size_of(ptr)
    }

    /// The host pool's statistics.
    pub fn pool_stats(&self) -> PoolStats {
        self.pool().stats()
    }

    /// Checks that `bytes` at `ptr` lie in the heap's segment memory, aligned for `align`.
    fn check_view(&self, ptr: u64, bytes: u64, align: usize) -> Result<()> {
        let end = ptr.checked_add(bytes);
        if ptr < self.handle.mem
            || end.is_none_or(|e| e > self.handle.mem + self.capacity())
            || !ptr.is_multiple_of(align as u64)
        {
            return Err(Error::NotInHeap { ptr, bytes });
        }
        Ok(())
    }

    /// Copies the `T` at device address `ptr` (a heap object) to the host, after the heap's
    /// stream has finished its work.
    pub fn read<T: DeviceCopy>(&self, ptr: u64) -> Result<T> {
        Ok(self.read_slice::<T>(ptr, 1)?.remove(0))
    }

    /// Copies `n` values of `T` at `ptr` to the host.
    pub fn read_slice<T: DeviceCopy>(&self, ptr: u64, n: usize) -> Result<Vec<T>> {
        let bytes = (n * std::mem::size_of::<T>()) as u64;
        self.check_view(ptr, bytes, std::mem::align_of::<T>())?;
        self.gpu.sync()?;
        let mut v: Vec<T> = Vec::with_capacity(n);
        if bytes > 0 {
            // SAFETY: the range is inside the heap's device allocation (checked); the view
            // lives only for the copy.
            let src = unsafe {
                cust::memory::DeviceSlice::from_raw_parts(cust::memory::DevicePointer::from_raw(ptr), n)
            };
            // SAFETY: v has room for n values; DeviceCopy types may take any bytes; the copy
            // fills all n before set_len.
            unsafe {
                let dst = std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut std::mem::MaybeUninit<T>, n);
                src.copy_to(&mut *(dst as *mut [std::mem::MaybeUninit<T>] as *mut [T]))
                    .during("cuMemcpyDtoH (typed view)")?;
                v.set_len(n);
            }
        }
        Ok(v)
    }

    /// Copies `value` to device address `ptr` in the heap.
    pub fn write<T: DeviceCopy>(&self, ptr: u64, value: &T) -> Result<()> {
        let bytes = std::mem::size_of::<T>() as u64;
        self.check_view(ptr, bytes, std::mem::align_of::<T>())?;
        self.gpu.sync()?;
        // SAFETY: the range is inside the heap's device allocation (checked).
        let mut dst = unsafe {
            cust::memory::DeviceSlice::from_raw_parts_mut(cust::memory::DevicePointer::from_raw(ptr), 1)
        };
        dst.copy_from(std::slice::from_ref(value)).during("cuMemcpyHtoD (typed view)")
    }

    /// Copies the elements of a device-side `DVec<T>` whose raw parts (`RawVec<T>`: pointer,
    /// length, capacity) lie at `raw_at` (for example in an array of `RawVec`s a kernel
    /// filled). `T` must be the vector's element type.
    pub fn read_vec<T: DeviceCopy>(&self, raw_at: u64) -> Result<Vec<T>> {
        let [ptr, len, _cap] = self.read_any::<[u64; 3]>(raw_at)?;
        if len == 0 {
            return Ok(Vec::new());
        }
        self.read_slice::<T>(ptr, len as usize)
    }

    /// `read` for plain arrays of words, which may also live outside the heap (a kernel's
    /// argument buffer, from `veballoc::zeroed_u64s`).
    fn read_any<T: DeviceCopy + Default>(&self, ptr: u64) -> Result<T> {
        self.gpu.sync()?;
        let mut v = T::default();
        // SAFETY: a view of one T for the copy; the driver reports an address it does not know.
        let src = unsafe {
            cust::memory::DeviceSlice::from_raw_parts(cust::memory::DevicePointer::from_raw(ptr), 1)
        };
        src.copy_to(std::slice::from_mut(&mut v)).during("cuMemcpyDtoH (typed view)")?;
        Ok(v)
    }

    fn mapped(&self) -> Result<MutexGuard<'_, Mapped>> {
        match &self.mem {
            Some(Memory::Mapped(m)) => Ok(m.lock().unwrap_or_else(|e| e.into_inner())),
            _ => Err(Error::NotReleasable),
        }
    }

    /// Returns the memory of wholly free segments to the driver, keeping `keep_bytes` of free
    /// segments mapped for the kernels (from the highest segment down: allocation takes the
    /// lowest first). Trims first (`Heap::trim`). Returns the bytes given back. Kernels may run
    /// meanwhile; they just see a smaller heap. `Error::NotReleasable` for a heap made with
    /// `Heap::new`.
    pub fn trim_memory(&self, keep_bytes: u64) -> Result<u64> {
        let mut mapped = self.mapped()?;
        self.trim()?;
        let max = self.layout.num_segments as u64;
        let out = DeviceBuffer::<u32>::zeroed(1 + max as usize).during("cuMemAlloc")?;
        let (arg, keep, o) = (self.arg(), keep_bytes.div_ceil(SEGMENT_BYTES), out.as_device_ptr().as_raw());
        // SAFETY: veballoc_release_segments(heap, keep, max, out) with 1 + max words.
        unsafe {
            self.gpu.launch("veballoc_release_segments", 1, 1, crate::kernel_args![arg, keep, max, o])?
        };
        self.gpu.sync()?;
        let mut list = vec![0u32; 1 + max as usize];
        CopyDestination::copy_to(&*out, &mut list[..]).during("cuMemcpyDtoH (released segments)")?;
        let n = list[0] as usize;
        for &seg in &list[1..1 + n] {
            mapped.unmap(seg)?;
        }
        Ok(n as u64 * SEGMENT_BYTES)
    }

    /// Maps memory again for up to `bytes` of the segments `trim_memory` returned (lowest
    /// first) and gives them back to the kernels. Returns the bytes mapped; less than asked
    /// when the card has no more free memory (the error of the mapping that failed is
    /// dropped: what was mapped before it is kept).
    pub fn regrow_memory(&self, bytes: u64) -> Result<u64> {
        let mut mapped = self.mapped()?;
        let mut segs = Vec::new();
        for seg in mapped.unmapped().into_iter().take(bytes.div_ceil(SEGMENT_BYTES) as usize) {
            if mapped.map(seg).is_err() {
                break;
            }
            segs.push(seg);
        }
        if !segs.is_empty() {
            let buf = DeviceBuffer::from_slice(&segs).during("cuMemAlloc")?;
            let (arg, p, n) = (self.arg(), buf.as_device_ptr().as_raw(), segs.len() as u64);
            // SAFETY: veballoc_reacquire_segments(heap, segs, n).
            unsafe {
                self.gpu.launch(
                    "veballoc_reacquire_segments",
                    n,
                    MAINT_BLOCK,
                    crate::kernel_args![arg, p, n],
                )?
            };
            self.gpu.sync()?;
        }
        Ok(segs.len() as u64 * SEGMENT_BYTES)
    }

    /// Bytes of segment memory backed by device memory now (the capacity, less what
    /// `trim_memory` returned).
    pub fn mapped_bytes(&self) -> u64 {
        match self.mapped() {
            Ok(m) => m.mapped() as u64 * SEGMENT_BYTES,
            Err(_) => self.capacity(),
        }
    }

    /// Copies the metadata to the host, validates it, and returns the statistics.
    /// Waits for the heap's stream first; kernels on other streams must have finished.
    pub fn stats(&self) -> Result<Stats> {
        self.gpu.sync()?;
        let meta = self.meta.as_ref().expect("live heap");
        let mut host = vec![0u64; meta.len()];
        cust::memory::CopyDestination::copy_to(&**meta, &mut host[..]).during("cuMemcpyDtoH (metadata)")?;
        let view = DeviceHeap { meta: host.as_ptr() as u64, ..self.handle };
        view.validate().map_err(Error::Corrupt)
    }

    /// Frees the heap's GPU memory now, reporting errors (Drop ignores them).
    pub fn destroy(mut self) -> Result<()> {
        self.gpu.sync()?;
        if let Some(Memory::Buffer(m)) = self.mem.take() {
            DeviceBuffer::drop(m).map_err(|(err, _)| Error::Cuda { call: "cuMemFree (heap)", err })?;
        }
        if let Some(m) = self.meta.take() {
            DeviceBuffer::drop(m).map_err(|(err, _)| Error::Cuda { call: "cuMemFree (metadata)", err })?;
        }
        Ok(())
    }
}

/// The heap as the host pool's source of segments: one-thread kernels on the heap's stream.
struct Segments<'a>(&'a Heap);

impl SegmentSource for Segments<'_> {
    fn claim(&self, k: u64) -> Result<Option<u32>> {
        let out = crate::zeroed_u64s(1)?;
        let (arg, o) = (self.0.arg(), out.as_device_ptr().as_raw());
        // SAFETY: veballoc_host_claim(heap, k, out) with one output word.
        unsafe { self.0.gpu.launch("veballoc_host_claim", 1, 1, crate::kernel_args![arg, k, o])? };
        self.0.gpu.sync()?;
        let mut v = [0u64; 1];
        CopyDestination::copy_to(&*out, &mut v[..]).during("cuMemcpyDtoH (host claim)")?;
        Ok((v[0] != u64::MAX).then_some(v[0] as u32))
    }

    fn release(&self, seg: u32, k: u32) -> Result<()> {
        let (arg, s, k) = (self.0.arg(), seg as u64, k as u64);
        // SAFETY: veballoc_host_release(heap, seg, k).
        unsafe { self.0.gpu.launch("veballoc_host_release", 1, 1, crate::kernel_args![arg, s, k])? };
        self.0.gpu.sync()
    }

    fn segment_addr(&self, seg: u32) -> u64 {
        self.0.handle.mem + seg as u64 * SEGMENT_BYTES
    }
}

/// How large a [`LazyHeap`] is.
#[derive(Clone, Copy, Debug)]
pub enum HeapSize {
    /// This many bytes.
    Bytes(u64),
    /// As large as the card allows ([`Heap::auto`]).
    Auto,
}

/// A heap created on first use (on device 0), for programs that may never need one.
///
/// ```no_run
/// let lazy = veballoc::LazyHeap::new(veballoc::HeapSize::Auto);
/// // ... nothing happens on the GPU until:
/// let heap = lazy.get()?;
/// # Ok::<(), veballoc::Error>(())
/// ```
pub struct LazyHeap {
    size: HeapSize,
    cell: OnceLock<Heap>,
    init: Mutex<()>,
}

impl LazyHeap {
    pub const fn new(size: HeapSize) -> Self {
        LazyHeap { size, cell: OnceLock::new(), init: Mutex::new(()) }
    }

    /// The heap, created (with a new `Gpu`) on the first call; an error leaves it uncreated,
    /// so a later call tries again.
    pub fn get(&self) -> Result<&Heap> {
        if let Some(h) = self.cell.get() {
            return Ok(h);
        }
        let _one = self.init.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = self.cell.get() {
            return Ok(h);
        }
        let gpu = Gpu::new()?;
        let heap = match self.size {
            HeapSize::Bytes(b) => Heap::new(&gpu, b)?,
            HeapSize::Auto => Heap::auto(&gpu)?,
        };
        Ok(self.cell.get_or_init(|| heap))
    }

    /// Whether the heap exists yet.
    pub fn is_created(&self) -> bool {
        self.cell.get().is_some()
    }
}
