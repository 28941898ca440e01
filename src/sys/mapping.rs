//! Anonymous memory mappings for long lines (protocol::line_region): huge-page aligned,
//! backed only where written.
use std::ptr;

const HUGE_PAGE: usize = 2 << 20;

/// An anonymous private mapping, its usable part aligned to a huge page.
pub struct Mapping {
  map: *mut libc::c_void,
  map_len: usize,
  start: *mut u8,
  capacity: usize,
}

// SAFETY: the mapping is owned by one `Mapping`; `&mut` access is unique and `&` access
// only reads, so it may move between threads and be read from several.
unsafe impl Send for Mapping {}
// SAFETY: as for Send: shared access only reads.
unsafe impl Sync for Mapping {}

impl Mapping {
  pub fn new(capacity: usize) -> Option<Self> {
    let map_len = capacity.checked_add(HUGE_PAGE)?;
    // SAFETY: a fresh anonymous mapping; no existing memory is touched. NORESERVE: only
    // the pages a line actually fills are ever backed.
    let map = unsafe {
      libc::mmap(
        ptr::null_mut(),
        map_len,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
        -1,
        0,
      )
    };
    if map == libc::MAP_FAILED {
      return None;
    }
    let skip = (HUGE_PAGE - map as usize % HUGE_PAGE) % HUGE_PAGE;
    // SAFETY: skip < HUGE_PAGE, so start..start+capacity lies inside the mapping.
    let start = unsafe { map.cast::<u8>().add(skip) };
    // No MADV_HUGEPAGE: where THP's defrag setting is `madvise` (Debian's default), an
    // advised region's faults compact memory synchronously, and a 10 MiB line then took
    // 40–70 ms instead of 5–10 ms. Aligned, the region still gets huge pages where THP is
    // `always`.
    Some(Mapping {
      map,
      map_len,
      start,
      capacity,
    })
  }

  pub fn bytes(&self) -> &[u8] {
    // SAFETY: start..start+capacity is mapped readable (zero-filled until written) for
    // the life of self.
    unsafe { std::slice::from_raw_parts(self.start, self.capacity) }
  }

  pub fn bytes_mut(&mut self) -> &mut [u8] {
    // SAFETY: as in bytes(), and &mut self makes this the only access.
    unsafe { std::slice::from_raw_parts_mut(self.start, self.capacity) }
  }
}

impl Drop for Mapping {
  fn drop(&mut self) {
    // SAFETY: unmaps exactly the mapping made in new(); nothing refers to it any more.
    unsafe { libc::munmap(self.map, self.map_len) };
  }
}
